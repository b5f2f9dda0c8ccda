"""acp-session: a typed, fast client for the Agent Client Protocol (ACP) version 2."""

__version__ = "0.1.0"
