"""The host's session bookkeeping, sans I/O: what a session has said (its update log), who is attached, which
permission requests wait and who answered them. The anyio drivers (``host.py``, ``front.py``) act on what these
classes decide; the tests drive them directly.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from itertools import islice, repeat
from typing import Any, Generic, Literal, TypeVar

from ..schema import unstable as mu
from ..schema.types import SessionInfoUpdate, StateUpdate

__all__ = [
    "DEFAULT_MAX_LOG_BYTES",
    "DEFAULT_MAX_LOG_ENTRIES",
    "ELICITATION_METHOD",
    "HOST_META",
    "PERMISSION_METHOD",
    "HostSession",
    "SUBAGENT_KINDS",
    "PermissionAsk",
    "TurnState",
    "UpdateLog",
    "elicitation_mode",
    "is_subagent_kind",
    "struct_tag",
]

H = TypeVar("H")
_STATE_UPDATES = (StateUpdate, mu.StateUpdate)
_INFO_UPDATES = (SessionInfoUpdate, mu.SessionInfoUpdate)  # type: ignore[attr-defined]

HOST_META = "acpSession/host"
"""``_meta`` key of the host's ``initialize`` answer: ``{"version": ...}`` (a client may tell a host apart), and
of a resume's answer for a read-only session: ``{"readOnly": REASON}``."""
SUBAGENT_KINDS = frozenset({"subagent_update", "session_message", "session_message_chunk"})
"""The parent's updates about its children (Preview): relayed, as the children's own updates are, only to the
clients that asked for subagents."""
DEFAULT_MAX_LOG_ENTRIES = 50_000
"""Updates a session keeps for replay (the oldest go first beyond it)."""
DEFAULT_MAX_LOG_BYTES = 64 * 1024 * 1024
"""Bytes of encoded updates a session keeps for replay (the oldest go first beyond it)."""

TurnState = Literal["idle", "running", "requires_action"]
_TURN_STATES: dict[str, TurnState] = {"idle": "idle", "running": "running", "requires_action": "requires_action"}


def struct_tag(value: Any) -> str | None:
    """A tagged struct's tag (an elicitation's ``mode``, an answer's ``action``); a raw unknown one's too."""
    tag = getattr(getattr(type(value), "__struct_config__", None), "tag", None)
    if not isinstance(tag, str) and isinstance(value, dict):
        tag = value.get("action", value.get("mode"))
    return tag if isinstance(tag, str) else None


def elicitation_mode(request: Any) -> str | None:
    """``form`` or ``url`` (the modes a client may offer), or None for a mode this library does not know."""
    mode = struct_tag(request)
    return mode if mode in ("form", "url") else None


def is_subagent_kind(update: Any) -> bool:
    """Whether a decoded update is one of ``SUBAGENT_KINDS`` (a typed Preview update or a raw unknown one)."""
    tag = getattr(getattr(type(update), "__struct_config__", None), "tag", None)
    if not isinstance(tag, str) and isinstance(update, dict):
        tag = update.get("sessionUpdate")
    return tag in SUBAGENT_KINDS


_PLAIN, _SUBAGENT, _STATE, _INFO = range(4)
_now = time.time
_KINDS: dict[type, int] = {}
"""What ``HostSession.record`` does with an update, by its type (a typed update's kind is its type's; an
update's raw dict is looked at each time)."""


def _kind(update: Any) -> int:
    if is_subagent_kind(update):
        kind = _SUBAGENT
    elif isinstance(update, _STATE_UPDATES):
        kind = _STATE
    elif isinstance(update, _INFO_UPDATES):
        kind = _INFO
    else:
        kind = _PLAIN
    if hasattr(type(update), "__struct_config__"):
        _KINDS[type(update)] = kind
    return kind


class UpdateLog:
    """A session's updates as the host sends them to clients (each the encoded ``session/update`` params),
    numbered from 1 in arrival order. Bounded: beyond ``max_entries`` or ``max_bytes`` the oldest are dropped
    (``dropped`` counts them), so a replay then starts later than the session did. An update marked ``subagent``
    (a child session's own, or the parent's about its children) goes only to clients that asked for them
    (``feed``)."""

    def __init__(self, max_entries: int = DEFAULT_MAX_LOG_ENTRIES, max_bytes: int = DEFAULT_MAX_LOG_BYTES) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("an update log keeps at least one entry and one byte")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: deque[tuple[int, bytes, bool]] = deque()
        self._bytes = 0
        self.last_seq = 0
        """The number of the newest update (0: none yet)."""
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size(self) -> int:
        """Bytes held."""
        return self._bytes

    @property
    def first_seq(self) -> int:
        """The number of the oldest update held (``last_seq + 1`` when none is)."""
        return self._entries[0][0] if self._entries else self.last_seq + 1

    def append(self, params: bytes, seq: int | None = None, *, subagent: bool = False) -> int:
        """Keep one update; returns its number. ``seq`` restores a stored update's number (it must grow);
        ``subagent`` marks a subagent's update (``feed``)."""
        if seq is None:
            seq = self.last_seq + 1
        elif seq <= self.last_seq:
            raise ValueError(f"update number {seq} is not after {self.last_seq}")
        self.last_seq = seq
        self._entries.append((seq, params, subagent))
        self._bytes += len(params)
        self._trim()
        return seq

    def add(self, params: bytes, subagent: bool) -> int:
        """``append`` of a new update (numbered next): the per-update path of a live session, kept short."""
        seq = self.last_seq = self.last_seq + 1
        entries = self._entries
        entries.append((seq, params, subagent))
        self._bytes += len(params)
        if len(entries) > self.max_entries or self._bytes > self.max_bytes:
            self._trim()
        return seq

    def add_run(self, params: list[bytes]) -> None:
        """``add`` for each of a run of new updates, none a subagent's, in one pass: the same numbers, the same
        entries kept and dropped (the trim keeps the newest that fit, whether it runs after each or once)."""
        first = self.last_seq + 1
        last = self.last_seq = self.last_seq + len(params)
        entries = self._entries
        entries.extend(zip(range(first, last + 1), params, repeat(False)))
        self._bytes += sum(map(len, params))
        if len(entries) > self.max_entries or self._bytes > self.max_bytes:
            self._trim()

    def _trim(self) -> None:
        entries = self._entries
        while len(entries) > 1 and (len(entries) > self.max_entries or self._bytes > self.max_bytes):
            _, gone, _ = entries.popleft()
            self._bytes -= len(gone)
            self.dropped += 1

    def after(self, seq: int, limit: int | None = None) -> list[tuple[int, bytes]]:
        """The updates numbered above ``seq`` (at most ``limit``), oldest first."""
        out: list[tuple[int, bytes]] = []
        if not self._entries or seq >= self.last_seq:
            return out
        start = max(0, seq + 1 - self._entries[0][0])
        for index in range(start, len(self._entries)):
            number, params, _ = self._entries[index]
            out.append((number, params))
            if limit is not None and len(out) >= limit:
                break
        return out

    def feed(self, seq: int, limit: int, *, subagents: bool) -> tuple[list[tuple[int, bytes]], int]:
        """What one client is sent after ``seq``: at most ``limit`` updates looked at, those marked ``subagent``
        left out unless ``subagents``; with the number of the last one looked at (the client's next cursor)."""
        entries = self._entries
        if not entries or seq >= self.last_seq:
            return [], seq
        start = max(0, seq + 1 - entries[0][0])
        stop = min(start + limit, len(entries))
        if stop <= start:
            return [], seq
        # One pass in C from the nearer end of the deque (a live client reads near the newest end).
        size = len(entries)
        if size - start < start:
            wanted = list(islice(reversed(entries), size - stop, size - start))
            wanted.reverse()
        else:
            wanted = list(islice(entries, start, stop))
        if subagents:
            out = [(number, params) for number, params, _ in wanted]
        else:
            out = [(number, params) for number, params, subagent in wanted if not subagent]
        return out, wanted[-1][0]


PERMISSION_METHOD = "session/request_permission"
ELICITATION_METHOD = "elicitation/create"


class PermissionAsk(Generic[H]):
    """One interactive request of the agent (a permission request, or an ``elicitation/create``: ``method``),
    asked of every client attached to its session that can answer it: each client's request is a handle ``H``
    (the driver's pending request). The first answer wins; the others are withdrawn.

    ``session_id`` is the host's session the request belongs to: the request's own session, or for a subagent's
    request (``subagent``) the root session whose log keeps the child."""

    def __init__(
        self,
        request: Any,
        asked_at: float | None = None,
        *,
        session_id: str | None = None,
        method: str = PERMISSION_METHOD,
        subagent: bool = False,
    ) -> None:
        self.request = request
        self.asked_at = time.monotonic() if asked_at is None else asked_at
        self.session_id: str = session_id if session_id is not None else getattr(request, "session_id", "")
        self.method = method
        self.subagent = subagent
        self._asked: dict[Hashable, H] = {}
        self.answer: Any = None
        self.answered_by: Hashable | None = None
        """The client whose answer won, or ``"policy"`` when nobody answered in time."""
        self.settled = False

    def asked(self, client: Hashable) -> bool:
        return client in self._asked

    def ask(self, client: Hashable, handle: H) -> None:
        """``client`` was asked (``handle``); a settled request is asked of nobody (the driver checks first)."""
        if self.settled:
            raise RuntimeError("the permission request is settled")
        self._asked[client] = handle

    @property
    def clients(self) -> list[Hashable]:
        return list(self._asked)

    def settle(self, client: Hashable, answer: Any) -> list[H] | None:
        """``client`` answered: when it is the first, the answer stands and the other clients' requests are
        returned, to be withdrawn; None when another answer came first (this one changes nothing)."""
        if self.settled:
            return None
        self.settled = True
        self.answer = answer
        self.answered_by = client
        self._asked.pop(client, None)
        others = list(self._asked.values())
        self._asked.clear()
        return others

    def forget(self, client: Hashable) -> None:
        """``client`` went away (or its request failed): it is not waited for any more."""
        self._asked.pop(client, None)

    def withdraw_all(self) -> list[H]:
        """The request ended without a client's answer (the agent withdrew it, the policy answered): every
        client's request, to be withdrawn."""
        self.settled = True
        others = list(self._asked.values())
        self._asked.clear()
        return others


@dataclass
class HostSession:
    """A session as the host keeps it: the agent's session id (the id clients use too), its log, its turn state,
    the clients attached and the permission requests waiting."""

    session_id: str
    cwd: str
    agent: str
    protocol_version: int = 2
    title: str | None = None
    additional_directories: list[str] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    resumable: bool = True
    live: bool = True
    """Whether the agent has the session now (False after a restart until it was resumed, or for good when the
    agent could not resume it: then the session is read-only)."""
    log: UpdateLog = field(default_factory=UpdateLog)
    state: TurnState = "idle"
    stop_reason: str | None = None
    turns: int = 0
    """Prompts sent to the agent and not answered yet."""
    prompted_by: str | None = None
    """The client that sent the latest prompt (for the operator's events)."""
    attached: set[Hashable] = field(default_factory=set)
    permissions: list[PermissionAsk[Any]] = field(default_factory=list)
    mcp_servers: list[Any] = field(default_factory=list)
    """The MCP servers the clients gave the session (``session/new``, then the latest ``session/resume`` that gave
    some): the agent has them, and gets them again when it is restarted. In memory only (they may hold secrets)."""

    def record(self, params: bytes, update: Any = None, *, seq: int | None = None, subagent: bool = False) -> int:
        """An update from the agent: logged (numbered), the turn state followed; ``update`` is the decoded
        update when the caller has it (its ``session_update`` tag, ``state``, ``stop_reason``, ``title``); ``seq``
        restores a stored update's number. A ``subagent`` update (a child session's own, kept in its root
        session's log) is logged and marked, and leaves this session's turn state and title alone."""
        kind = _KINDS.get(type(update))
        if kind is None:
            kind = _kind(update)
        subagent = subagent or kind == _SUBAGENT
        seq = self.log.add(params, subagent) if seq is None else self.log.append(params, seq, subagent=subagent)
        self.updated_at = _now()
        if kind == _PLAIN or subagent:
            return seq
        if kind == _STATE:
            state = update.state
            if state in _TURN_STATES:
                self.state = _TURN_STATES[state]
            stop = update.stop_reason
            self.stop_reason = stop if isinstance(stop, str) else None
        elif kind == _INFO and isinstance(update.title, str):
            self.title = update.title
        return seq

    def attach(self, client: Hashable) -> list[PermissionAsk[Any]]:
        """``client`` attached: the permission requests still waiting, to be asked of it."""
        self.attached.add(client)
        return [ask for ask in self.permissions if not ask.settled and not ask.asked(client)]

    def detach(self, client: Hashable) -> bool:
        """``client`` went away; True when it was attached."""
        for ask in self.permissions:
            ask.forget(client)
        if client in self.attached:
            self.attached.discard(client)
            return True
        return False

    def waiting(self, ask: PermissionAsk[Any]) -> None:
        self.permissions.append(ask)

    def done(self, ask: PermissionAsk[Any]) -> None:
        if ask in self.permissions:
            self.permissions.remove(ask)

    def read_only_reason(self) -> str | None:
        """Why prompts are refused, or None when the session takes them."""
        if self.live:
            return None
        if not self.resumable:
            return "the agent cannot resume this session after a restart: its history is read-only"
        return "the agent has not resumed this session yet"


def ordered(sessions: Iterable[HostSession]) -> list[HostSession]:
    """Newest updated first, as ``session/list`` shows them."""
    return sorted(sessions, key=lambda s: s.updated_at, reverse=True)
