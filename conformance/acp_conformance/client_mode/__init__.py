"""Client mode: a scripted ACP agent plays one scenario per run of the client under test, and the client's
side of each conversation is judged (``acp-conformance client -- <client command ...>``)."""
