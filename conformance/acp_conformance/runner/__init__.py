"""``acp-conformance``: check an ACP agent command (protocol v1 or v2) against the rules a client can observe."""
