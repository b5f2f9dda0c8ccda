"""Opt-in providers that answer the agent's ACP v1 ``fs/*`` and ``terminal/*`` requests on this machine.

Nothing here is used unless the embedder passes a provider to the client; see docs/providers.md for what the
built-in ones allow and refuse, and how to write your own against the Protocols.
"""

from acp_session.providers.files import FileSystemProvider, LocalFileSystem
from acp_session.providers.terminals import LocalTerminals, TerminalProvider, minimal_environment

__all__ = ["FileSystemProvider", "LocalFileSystem", "LocalTerminals", "TerminalProvider", "minimal_environment"]
