"""``acp-conformance``: check an ACP v2 agent command against the rules a client can observe."""
