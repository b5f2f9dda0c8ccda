"""The plumbing under ``Probe``: one agent's stdout recorded line by line as frames, nothing hidden, our lines to its
stdin, and waits for frames matching a predicate. It knows JSON-RPC envelopes and no ACP method; what the client
answers (``Probe``) is decided by the hooks ``_agent_request``, ``_response_arrived`` and ``_requesting``.

The runner deliberately does not use ``acp_session.rpc.Connection`` here: checks must see the exact frames, their
order, and anything on stdout that is not a message.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import anyio
import msgspec

from acp_session.codec import encode
from acp_session.rpc.messages import ErrorObject, ErrorOut, NotificationOut, RequestOut, ResultOut
from acp_session.transport import AgentProcess, FrameReader, OversizedFrame, encode_frame

from .frames import Frame, WireLine, line_problem
from .outcomes import AUTH_REQUIRED, ErrorAnswer, Fail, LoginRequired

__all__ = ["Wire"]


class Wire:
    """Send JSON-RPC messages to one agent process and wait for frames matching predicates."""

    def __init__(self, agent: AgentProcess, timeout: float, startup_timeout: float = 20.0) -> None:
        self.agent = agent
        self.timeout = timeout  # default for waits
        self.startup_timeout = startup_timeout  # for initialize: a loaded machine starts interpreters slowly
        self.frames: list[Frame] = []
        self.wire: list[WireLine] = []  # both directions, in order
        self._changed = anyio.Event()
        self._next_id = 0
        self._eof = False
        self.start = anyio.current_time()
        self.init_index = -1  # the frame of the (first) initialize response
        self.answered: set[Any] = set()

    # -- reading ---------------------------------------------------------------------------------------

    async def read_loop(self) -> None:
        reader = FrameReader()
        try:
            while True:
                try:
                    data = await self.agent.receive()
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    break
                for item in reader.feed(data):
                    await self._record(item)
            for item in reader.feed_eof():
                await self._record(item)
        finally:
            self._eof = True
            self._changed.set()

    async def _record(self, item: bytes | OversizedFrame) -> None:
        if isinstance(item, OversizedFrame):
            frame = Frame(len(self.frames), b"", None, f"oversized frame of {item.size} bytes", anyio.current_time())
        else:
            message, problem = line_problem(item)
            frame = Frame(len(self.frames), bytes(item), message, problem, anyio.current_time())
        self.frames.append(frame)
        self.wire.append(WireLine.of("received", frame.time - self.start, frame.raw or (frame.problem or "").encode()))
        if frame.is_response:
            self._response_arrived(frame)
        self._changed.set()
        self._changed = anyio.Event()
        if frame.is_request and frame.problem is None:
            with contextlib.suppress(Fail):  # the agent is gone: the check waiting for it will say so
                await self._agent_request(frame)

    def _response_arrived(self, frame: Frame) -> None:
        """A response to one of our requests arrived (before any waiter sees it)."""

    async def _agent_request(self, frame: Frame) -> None:
        """The agent sent a well-formed request: this plumbing knows no method."""
        assert frame.message is not None
        await self.respond_error(frame.message["id"], -32601, f"Method not found: {frame.method}")

    @property
    def eof(self) -> bool:
        return self._eof

    async def wait_for(
        self, predicate: Callable[[Frame], bool], timeout: float | None = None, start: int = 0
    ) -> Frame | None:
        """The first frame at or after index ``start`` matching ``predicate``, or None after ``timeout``."""
        position = start
        with anyio.move_on_after(self.timeout if timeout is None else timeout):
            while True:
                while position < len(self.frames):
                    frame = self.frames[position]
                    position += 1
                    if predicate(frame):
                        return frame
                if self._eof:
                    return None
                await self._changed.wait()
        return None

    def own_frames(self, start: int) -> list[Frame]:
        """What the agent wrote before it answered ``initialize``, then everything from ``start`` on: a check's
        own traffic on a shared process, plus the start-up lines every process has."""
        head = self.frames[: self.init_index + 1]
        return head + self.frames[max(start, len(head)) :]

    def find(self, predicate: Callable[[Frame], bool], start: int = 0, stop: int | None = None) -> list[Frame]:
        return [f for f in self.frames[start:stop] if predicate(f)]

    @property
    def sent_ids(self) -> int:
        """Our request ids are 1, 2, ... up to this one."""
        return self._next_id

    @property
    def mark(self) -> int:
        """Index of the next frame to arrive (use as ``start`` for later waits)."""
        return len(self.frames)

    # -- writing ---------------------------------------------------------------------------------------

    async def _send(self, envelope: msgspec.Struct) -> None:
        data = encode_frame(encode(envelope))
        self.wire.append(WireLine.of("sent", anyio.current_time() - self.start, data))
        try:
            await self.agent.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            raise Fail("transports.mdx#stdio", "the agent closed its stdin (it exited)") from None

    async def send_raw(self, line: bytes) -> None:
        """Write one line as it is (a batch array, say): for checks of what the agent does with it."""
        data = line if line.endswith(b"\n") else line + b"\n"
        self.wire.append(WireLine.of("sent", anyio.current_time() - self.start, data))
        try:
            await self.agent.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            raise Fail("transports.mdx#stdio", "the agent closed its stdin (it exited)") from None

    def _requesting(self, request_id: int, method: str, params: Any) -> None:
        """Request ``request_id`` is about to be sent (its response cannot have arrived yet)."""

    async def request(self, method: str, params: Any = None) -> int:
        self._next_id += 1
        self._requesting(self._next_id, method, params)
        await self._send(RequestOut(jsonrpc="2.0", id=self._next_id, method=method, params=params))
        return self._next_id

    async def notify(self, method: str, params: Any = None) -> None:
        await self._send(NotificationOut(jsonrpc="2.0", method=method, params=params))

    async def respond(self, id: Any, result: Any) -> None:
        self.answered.add(id)
        await self._send(ResultOut(jsonrpc="2.0", id=id, result=result))

    async def respond_error(self, id: Any, code: int, message: str, data: Any = None) -> None:
        self.answered.add(id)
        await self._send(ErrorOut(jsonrpc="2.0", id=id, error=ErrorObject(code=code, message=message, data=data)))

    async def response(self, id: int, timeout: float | None = None, start: int = 0) -> Frame | None:
        return await self.wait_for(
            lambda f: f.is_response and f.message is not None and f.message.get("id") == id, timeout, start
        )

    async def call(self, method: str, params: Any = None, *, rule: str, timeout: float | None = None) -> Frame:
        """Send a request and wait for its response; fail naming ``rule`` when none arrives in time."""
        if method == "initialize" and timeout is None:
            timeout = self.startup_timeout
        start = self.mark
        rid = await self.request(method, params)
        frame = await self.response(rid, timeout, start)
        if frame is None and self.eof:
            raise Fail(rule, f"the agent exited (closed its stdout) before answering {method}")
        if frame is None:
            raise Fail(rule, f"no response to {method} within {self.timeout if timeout is None else timeout:g}s")
        if method == "initialize" and self.init_index < 0:
            self.init_index = frame.index
        return frame

    async def call_ok(self, method: str, params: Any = None, *, rule: str, timeout: float | None = None) -> Any:
        """``call``, failing naming ``rule`` on an error answer; -32000 raises ``LoginRequired``."""
        frame = await self.call(method, params, rule=rule, timeout=timeout)
        if frame.error is not None:
            if frame.error_code == AUTH_REQUIRED and method != "initialize":
                raise LoginRequired(method, frame.error)
            raise ErrorAnswer(rule, f"{method} failed: {frame.error}", frame.error_code)
        return frame.result

    async def barrier(self, timeout: float | None = None) -> None:
        """Send a request the agent cannot know and wait for its answer.

        Agents read their input in order, so once this is answered every earlier message has been read and
        whatever it made the agent send at once has arrived: the event to wait for before asserting that
        something did *not* happen, instead of a fixed quiet period.
        """
        start = self.mark
        rid = await self.request("_acp_conformance/barrier", {})
        await self.response(rid, timeout, start)

    async def send_pipelined(self, *calls: tuple[str, Any]) -> list[int]:
        """Send several requests ``(method, params)`` in one write, none waiting for an answer (a pipelining
        client): their ids, in order."""
        ids: list[int] = []
        data = b""
        for method, params in calls:
            self._next_id += 1
            self._requesting(self._next_id, method, params)
            data += encode_frame(encode(RequestOut(jsonrpc="2.0", id=self._next_id, method=method, params=params)))
            ids.append(self._next_id)
        self.wire.append(WireLine.of("sent", anyio.current_time() - self.start, data))
        try:
            await self.agent.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            raise Fail("transports.mdx#stdio", "the agent closed its stdin (it exited)") from None
        return ids
