"""Developer tools run from a checkout, not shipped in the wheel: ``dev/real_agents/`` (``make real-agents``)."""
