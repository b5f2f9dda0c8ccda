"""ACP v2 conformance tooling: a reference agent (``conformance.agent``) and a runner (``conformance.runner``)."""
