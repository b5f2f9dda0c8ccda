"""Drivers: small programs that make a client under test follow client mode's scenarios (the driver contract).

``DRIVERS`` names the shipped ones (``acp-conformance client --help`` lists them; a test keeps it complete)."""

DRIVERS = {
    "acp_session_cli": "acp-session's command line (acp-session chat --json --yes; Ctrl-C to cancel)",
    "acp_session_library": "acp-session's library (ClientBuilder and Conversation; approves every permission); "
    "--providers before the agent's command: with LocalFileSystem and LocalTerminals (fs and terminal advertised)",
}
"""Module name (under ``acp_conformance.client_mode.drivers``) -> what it drives."""
