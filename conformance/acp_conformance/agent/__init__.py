"""The ACP v2 reference agent: deterministic scenarios over stdio, built on ``acp_session.rpc``."""

AGENT_NAME = "acp-reference-agent"
AGENT_VERSION = "0.1.0"
PROTOCOL_VERSION = 2

__all__ = ["AGENT_NAME", "AGENT_VERSION", "PROTOCOL_VERSION"]
