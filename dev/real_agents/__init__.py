"""The real-agent suite: install pinned ACP agents and check them through acp-session's public API.

``python -m dev.real_agents.install`` puts the agents of ``agents.toml`` into a cache folder;
``python -m dev.real_agents.check`` runs each of them offline, with a fresh HOME and no credentials, and writes
``docs/real-agents.md`` (``make real-agents`` does both). Not part of the test suite: the agents download
hundreds of MB on first start.
"""
