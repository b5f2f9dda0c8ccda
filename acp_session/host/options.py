"""``HostOptions``: what a host runs (the agent), where it serves (``ServerOptions``), what it lets the agent do
and how it answers the agent's permission requests that no client answers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..client import PermissionPolicy
from ..server import ServerOptions
from .core import DEFAULT_MAX_LOG_BYTES, DEFAULT_MAX_LOG_ENTRIES

__all__ = ["DEFAULT_PERMISSION_TIMEOUT", "HostOptions"]

DEFAULT_PERMISSION_TIMEOUT = 300.0
"""Seconds a permission request of the agent waits for a client's answer before the policy answers it."""


@dataclass(frozen=True)
class HostOptions:
    """A host's configuration, checked when made (``ValueError`` says what to change).

    ``agent`` is a registry id or alias (a string: ``"codex-acp"``) or the agent's command line (a sequence of
    strings), as ``ClientBuilder.spawn`` takes it; ``agent_label`` is how sessions name it (default: the id or the
    command line joined). ``policy`` answers a permission request nobody answered within ``permission_timeout``
    seconds (None: the cancelled outcome, never an approval); ``allow_files`` / ``allow_terminal`` give the agent
    the library's confined providers (files and commands in each session's directories)."""

    agent: str | Sequence[str]
    server: ServerOptions = field(default_factory=ServerOptions)
    store: str | None = None
    """A directory for the SQLite store (``--store DIR``): sessions and their updates survive a restart."""
    allow_files: bool = False
    allow_terminal: bool = False
    policy: PermissionPolicy | None = None
    permission_timeout: float = DEFAULT_PERMISSION_TIMEOUT
    """Seconds a permission request or an elicitation of the agent waits for a client's answer."""
    elicitation: bool = True
    """Offer the agent form and URL elicitation (``elicitation/create``), relayed to the clients that offer the
    mode; False: the agent is told the host takes none (``--no-elicitation``)."""
    agent_cwd: str | None = None
    """The agent process's working directory (default: the host's)."""
    agent_label: str | None = None
    max_log_entries: int = DEFAULT_MAX_LOG_ENTRIES
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES
    restart_attempts: int = 3
    """Failed starts in a row of a dead agent before the host gives up on it (0: a dead agent is not started
    again); its sessions are resumed after each start."""
    initialize_timeout: float | None = 60.0
    instrument: bool = False
    """OpenTelemetry spans and metrics of the host's connection to the agent (``ClientBuilder.instrument``: a turn,
    each request, each permission question; the ``otel`` extra), and spans of what clients do through the host
    (``tracing``: connections, attaches, prompts relayed, permission questions relayed), with ``tracer_provider`` /
    ``meter_provider`` or the global ones."""
    tracer_provider: Any = None
    meter_provider: Any = None

    def __post_init__(self) -> None:
        if isinstance(self.agent, str):
            if not self.agent.strip():
                raise ValueError("the agent is empty")
        elif not self.agent or not all(isinstance(part, str) for part in self.agent):
            raise ValueError("the agent's command line must be a non-empty sequence of strings")
        if not self.permission_timeout >= 0 or math.isinf(self.permission_timeout):
            raise ValueError(f"permission_timeout must be 0 or more seconds, not {self.permission_timeout!r}")
        if self.max_log_entries < 1 or self.max_log_bytes < 1:
            raise ValueError("the update log keeps at least one update")
        if self.restart_attempts < 0:
            raise ValueError("restart_attempts must be 0 or more")

    @property
    def label(self) -> str:
        if self.agent_label:
            return self.agent_label
        return self.agent if isinstance(self.agent, str) else " ".join(self.agent)

    @property
    def argv(self) -> str | list[str]:
        """What ``ClientBuilder.spawn`` is given."""
        return self.agent if isinstance(self.agent, str) else list(self.agent)
