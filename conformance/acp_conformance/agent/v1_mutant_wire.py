"""The reference agent's broken v1 wire (``--broken v1-...``, for testing conformance runners): the defects that live
in the JSON-RPC envelope rather than in what a method answers. ``MutantWire`` sits between the connection and
stdin/stdout and, once the client negotiated version 1, rewrites what the agent writes (answer ids, error shapes,
a byte that is not UTF-8), drops or answers some of what it reads, and writes messages the v1 front queued for
"just after this answer" (an update after a cancelled prompt's answer, a replay after a load's answer).

Each mode breaks one rule; without a ``v1-`` mode the transport is used as it is (``mutant_wire``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import msgspec

from acp_session.transport import Transport
from acp_session.transport.base import DEFAULT_RECEIVE_SIZE, PeerExit

__all__ = ["V1_WIRE_MODES", "MutantWire", "mutant_wire"]

V1_WIRE_MODES: dict[str, str] = {
    "v1-bad-utf8": "v1: put a byte that is not UTF-8 into the first agent message chunk of each prompt turn",
    "v1-string-ids": "v1: answer a request whose id is a string with id null",
    "v1-result-and-error": "v1: give every error answer a result (null) as well",
    "v1-answer-notifications": "v1: answer unknown custom (_) notifications with an id-less -32601 error",
    "v1-drop-ext-requests": "v1: never answer custom (_) requests (the runner's _acp_conformance/barrier excepted)",
    "v1-multiline-errors": "v1: error messages with a second line",
    "v1-wedge-after-bad-params": "v1: stop answering requests after one whose params are not an object",
}
BARRIER = "_acp_conformance/barrier"  # acp-conformance's "has everything before this been read" request
_json = msgspec.json.Decoder()


def _decoded(line: bytes) -> dict[str, Any] | None:
    try:
        value = _json.decode(line)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


def _line(message: dict[str, Any]) -> bytes:
    return msgspec.json.encode(message) + b"\n"


class MutantWire:
    """A ``Transport`` around stdin/stdout that applies the ``v1-`` wire defects while ``active()`` (v1 spoken)."""

    def __init__(self, inner: Transport, modes: frozenset[str]) -> None:
        self.inner = inner
        self.modes = modes
        self.active: Callable[[], bool] = lambda: False  # set once the agent exists: has it negotiated v1?
        self._buffer = b""
        self._lock = anyio.Lock()
        self._requests: dict[Any, tuple[str, Any]] = {}  # incoming request id -> (method, its sessionId)
        self._after: dict[tuple[str, Any], list[dict[str, Any]]] = {}  # messages to write after such an answer
        self._armed: set[Any] = set()  # sessions whose next agent message chunk gets a non-UTF-8 byte
        self._wedged = False

    def on(self, mode: str) -> bool:
        return mode in self.modes and self.active()

    def after_answer(self, method: str, session_id: str, message: dict[str, Any]) -> None:
        """Write ``message`` right after the answer to the pending ``method`` request for ``session_id``."""
        self._after.setdefault((method, session_id), []).append(message)

    # -- reading -------------------------------------------------------------------------------------------

    async def receive(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes:
        """Whole lines only, the dropped ones left out."""
        while True:
            try:
                data = await self.inner.receive(max_bytes)
            except anyio.EndOfStream:
                if self._buffer:
                    rest, self._buffer = self._buffer, b""
                    return rest
                raise
            self._buffer += data
            end = self._buffer.rfind(b"\n")
            if end < 0:
                continue
            lines, self._buffer = self._buffer[: end + 1], self._buffer[end + 1 :]
            kept = [line for line in lines.splitlines(keepends=True) if await self._keep(line)]
            if kept:
                return b"".join(kept)

    async def _keep(self, line: bytes) -> bool:
        message = _decoded(line) if self.active() else None
        if message is None:
            return True
        method, rid = message.get("method"), message.get("id")
        params = message.get("params")
        if isinstance(method, str) and "id" in message:
            if self._wedged and self.on("v1-wedge-after-bad-params"):
                return False
            if "params" in message and not isinstance(params, dict):
                self._wedged = True  # this one is still answered, none after it
            if method.startswith("_") and method != BARRIER and self.on("v1-drop-ext-requests"):
                return False
            session_id = params.get("sessionId") if isinstance(params, dict) else None
            self._requests[rid] = (method, session_id)
            if method == "session/prompt" and self.on("v1-bad-utf8"):
                self._armed.add(session_id)
        elif isinstance(method, str) and method.startswith("_") and self.on("v1-answer-notifications"):
            error = {"code": -32601, "message": f"Method not found: {method}"}
            await self._write(_line({"jsonrpc": "2.0", "id": None, "error": error}))
        return True

    # -- writing -------------------------------------------------------------------------------------------

    async def send(self, item: bytes) -> None:
        if not self.active():
            await self._write(item)
            return
        out: list[bytes] = []
        for line in item.splitlines(keepends=True):
            out.append(self._rewrite(line))
            message = _decoded(line)
            if message is not None and "method" not in message:
                key = self._requests.pop(message.get("id"), None)
                out += [_line(queued) for queued in self._after.pop(key, [])] if key is not None else []
        await self._write(b"".join(out))

    def _rewrite(self, line: bytes) -> bytes:
        message = _decoded(line)
        if message is None:
            return line
        if "method" not in message:  # an answer
            changed = False
            if isinstance(message.get("id"), str) and self.on("v1-string-ids"):
                message["id"], changed = None, True
            error = message.get("error")
            if isinstance(error, dict) and self.on("v1-result-and-error"):
                message["result"], changed = None, True
            if isinstance(error, dict) and self.on("v1-multiline-errors"):
                error["message"], changed = f"{error.get('message')}\nSee the agent's log for details.", True
            return _line(message) if changed else line
        params = message.get("params")
        if not isinstance(params, dict):
            return line
        update = params.get("update")
        session_id = params.get("sessionId")
        chunk = isinstance(update, dict) and update.get("sessionUpdate") == "agent_message_chunk"
        if chunk and session_id in self._armed and self.on("v1-bad-utf8"):
            self._armed.discard(session_id)
            return _line(message).replace(b'"text":"', b'"text":"\xff', 1)
        return line

    async def _write(self, data: bytes) -> None:
        async with self._lock:
            await self.inner.send(data)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def peer_exit(self) -> PeerExit:
        return await self.inner.peer_exit()


def mutant_wire(transport: Transport, broken: frozenset[str]) -> Transport:
    """``transport`` wrapped when any ``v1-`` mode is on (the front may queue messages through it), else as it is."""
    if any(mode.startswith("v1-") for mode in broken):
        return MutantWire(transport, broken)
    return transport
