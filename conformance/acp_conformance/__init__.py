"""ACP conformance tooling: a reference agent (``acp_conformance.agent``) and a runner (``acp_conformance.runner``)."""
