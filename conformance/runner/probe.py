"""A raw view of one agent process: every stdout line is recorded as it arrived, nothing is hidden.

The runner deliberately does not use ``acp_session.rpc.Connection`` here: checks must see the exact
frames, their order, and anything on stdout that is not a message. Outgoing params are generated
types; envelopes are the rpc layer's envelope structs.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import msgspec

from acp_session.codec import encode
from acp_session.rpc.messages import ErrorObject, ErrorOut, NotificationOut, RequestOut, ResultOut
from acp_session.schema.types import (
    CancelledPermissionOutcome,
    Implementation,
    InitializeRequest,
    NewSessionRequest,
    PromptRequest,
    RequestPermissionResponse,
    SelectedPermissionOutcome,
    TextContent,
)
from acp_session.transport import AgentProcess, FrameReader, OversizedFrame, encode_frame, stdio_agent

__all__ = ["Fail", "Frame", "NotApplicable", "Probe", "spawn_probe"]

_json = msgspec.json.Decoder()


class Fail(Exception):
    """A check failed; ``rule`` names the rule (ACP2-NNN or a schema/docs reference) it violates."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"{rule}: {message}")
        self.rule = rule


class NotApplicable(Exception):
    """The check cannot run against this agent (capability not advertised, not the reference agent)."""


@dataclass
class Frame:
    index: int
    raw: bytes
    message: dict[str, Any] | None  # None when the line is not a JSON object
    problem: str | None  # why the line is not a well-formed message, if it is not
    time: float

    @property
    def method(self) -> str | None:
        m = self.message
        return m.get("method") if m is not None and isinstance(m.get("method"), str) else None

    @property
    def is_response(self) -> bool:
        m = self.message
        return m is not None and "method" not in m and ("result" in m or "error" in m)

    @property
    def is_request(self) -> bool:
        return self.method is not None and self.message is not None and "id" in self.message

    @property
    def update(self) -> dict[str, Any] | None:
        """The ``update`` object of a ``session/update`` notification."""
        if self.method != "session/update" or self.message is None:
            return None
        params = self.message.get("params")
        update = params.get("update") if isinstance(params, dict) else None
        return update if isinstance(update, dict) else None

    @property
    def session_id(self) -> Any:
        params = self.message.get("params") if self.message else None
        return params.get("sessionId") if isinstance(params, dict) else None

    def update_kind(self) -> str | None:
        u = self.update
        return u.get("sessionUpdate") if u is not None else None

    def state(self) -> str | None:
        u = self.update
        return u.get("state") if u is not None and u.get("sessionUpdate") == "state_update" else None


def _problem(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not valid UTF-8"
    if not text.strip():
        return None, "blank line"
    try:
        value = _json.decode(raw)
    except msgspec.DecodeError:
        return None, f"not JSON: {text[:60]!r}"
    if isinstance(value, list):
        return None, "a JSON array (batch); ACP v2 messages are single objects"
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not an object"
    if value.get("jsonrpc") != "2.0":
        return value, 'missing "jsonrpc": "2.0"'
    if "id" in value and value["id"] is None and "method" in value:
        return value, "request id is null"
    return value, None


OUTPUT_KINDS = frozenset(
    {
        "agent_message",
        "agent_message_chunk",
        "agent_thought",
        "agent_thought_chunk",
        "tool_call_update",
        "tool_call_content_chunk",
        "plan_update",
        "terminal_update",
        "terminal_output_chunk",
    }
)


class Probe:
    """Send typed messages to one agent process and wait for frames matching predicates."""

    def __init__(self, agent: AgentProcess, timeout: float, startup_timeout: float = 20.0) -> None:
        self.agent = agent
        self.timeout = timeout  # default for waits
        self.startup_timeout = startup_timeout  # for initialize: a loaded machine starts interpreters slowly
        self.frames: list[Frame] = []
        self._changed = anyio.Event()
        self._next_id = 0
        self._eof = False
        self.start = anyio.current_time()
        self.init_result: dict[str, Any] | None = None
        # Answer permission requests automatically (reject / cancelled) unless a check turns it off.
        self.auto_answer_permissions = True
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
            message, problem = _problem(item)
            frame = Frame(len(self.frames), bytes(item), message, problem, anyio.current_time())
        self.frames.append(frame)
        self._changed.set()
        self._changed = anyio.Event()
        if frame.method == "session/request_permission" and frame.is_request and self.auto_answer_permissions:
            await self._auto_answer(frame)

    async def _auto_answer(self, frame: Frame) -> None:
        assert frame.message is not None
        params = frame.message.get("params") or {}
        options = params.get("options") or []
        reject = [o for o in options if isinstance(o, dict) and str(o.get("kind", "")).startswith("reject")]
        outcome: Any = (
            SelectedPermissionOutcome(option_id=str(reject[0].get("optionId")))
            if reject
            else CancelledPermissionOutcome()
        )
        await self.respond(frame.message["id"], RequestPermissionResponse(outcome=outcome))

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

    def find(self, predicate: Callable[[Frame], bool], start: int = 0, stop: int | None = None) -> list[Frame]:
        return [f for f in self.frames[start:stop] if predicate(f)]

    @property
    def mark(self) -> int:
        """Index of the next frame to arrive (use as ``start`` for later waits)."""
        return len(self.frames)

    # -- writing ---------------------------------------------------------------------------------------

    async def _send(self, envelope: msgspec.Struct) -> None:
        await self.agent.send(encode_frame(encode(envelope)))

    async def request(self, method: str, params: Any = None) -> int:
        self._next_id += 1
        await self._send(RequestOut(jsonrpc="2.0", id=self._next_id, method=method, params=params))
        return self._next_id

    async def notify(self, method: str, params: Any = None) -> None:
        await self._send(NotificationOut(jsonrpc="2.0", method=method, params=params))

    async def respond(self, id: Any, result: Any) -> None:
        self.answered.add(id)
        await self._send(ResultOut(jsonrpc="2.0", id=id, result=result))

    async def respond_error(self, id: Any, code: int, message: str) -> None:
        self.answered.add(id)
        await self._send(ErrorOut(jsonrpc="2.0", id=id, error=ErrorObject(code=code, message=message)))

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
        if frame is None:
            raise Fail(rule, f"no response to {method} within {self.timeout if timeout is None else timeout:g}s")
        return frame

    async def call_ok(self, method: str, params: Any = None, *, rule: str, timeout: float | None = None) -> Any:
        frame = await self.call(method, params, rule=rule, timeout=timeout)
        assert frame.message is not None
        if "error" in frame.message:
            raise Fail(rule, f"{method} failed: {frame.message['error']}")
        return frame.message.get("result")

    # -- ACP shortcuts ---------------------------------------------------------------------------------

    @property
    def is_reference(self) -> bool:
        from conformance.agent import AGENT_NAME

        info = (self.init_result or {}).get("info")
        return isinstance(info, dict) and info.get("name") == AGENT_NAME

    @property
    def capabilities(self) -> dict[str, Any]:
        caps = (self.init_result or {}).get("capabilities")
        return caps if isinstance(caps, dict) else {}

    def session_capability(self, name: str) -> Any:
        session = self.capabilities.get("session")
        return session.get(name) if isinstance(session, dict) else None

    async def initialize(self, version: int = 2) -> dict[str, Any]:
        params = InitializeRequest(
            protocol_version=version, info=Implementation(name="acp-conformance", version="0.1.0")
        )
        result = await self.call_ok("initialize", params, rule="initialization.mdx#initialization")
        if not isinstance(result, dict):
            raise Fail("schema:InitializeResponse", f"initialize result is not an object: {result!r}")
        self.init_result = result
        return result

    async def new_session(self, cwd: str) -> str:
        result = await self.call_ok("session/new", NewSessionRequest(cwd=cwd), rule="session-setup.mdx")
        session_id = result.get("sessionId") if isinstance(result, dict) else None
        if not isinstance(session_id, str) or not session_id:
            raise Fail("schema:NewSessionResponse.sessionId", f"session/new gave no session id: {result!r}")
        return session_id

    async def prompt(self, session_id: str, text: str, blocks: Sequence[Any] = ()) -> int:
        prompt = list(blocks) or [TextContent(text=text)]
        return await self.request("session/prompt", PromptRequest(session_id=session_id, prompt=prompt))

    def is_update(self, session_id: str, *kinds: str) -> Callable[[Frame], bool]:
        def match(frame: Frame) -> bool:
            kind = frame.update_kind()
            return kind is not None and frame.session_id == session_id and (not kinds or kind in kinds)

        return match

    def is_state(self, session_id: str, *states: str) -> Callable[[Frame], bool]:
        def match(frame: Frame) -> bool:
            state = frame.state()
            return state is not None and frame.session_id == session_id and (not states or state in states)

        return match

    async def wait_idle(self, session_id: str, start: int, *, rule: str, timeout: float | None = None) -> Frame:
        frame = await self.wait_for(self.is_state(session_id, "idle"), timeout, start)
        if frame is None:
            raise Fail(rule, f"no idle state_update within {self.timeout if timeout is None else timeout:g}s")
        return frame

    async def settle(self, session_id: str, start: int, quiet: float = 0.5) -> Frame | None:
        """Wait for the idle update, or until the agent has been silent for ``quiet`` seconds.

        For checks whose subject is not the idle update itself (the ``turn-lifecycle`` check reports a
        missing idle), so one defect does not fail every check that happens to run a turn.
        """
        deadline = anyio.current_time() + self.timeout
        position = start
        while anyio.current_time() < deadline:
            seen = self.mark
            idle = await self.wait_for(self.is_state(session_id, "idle"), quiet, position)
            if idle is not None:
                return idle
            if self.mark == seen:
                return None
            position = seen
        return None

    async def _turn(self, session_id: str, text: str, blocks: Sequence[Any]) -> tuple[int, Frame]:
        start = self.mark
        rid = await self.prompt(session_id, text, blocks)
        response = await self.response(rid, start=start)
        if response is None:
            raise Fail("ACP2-064", f"no response to session/prompt within {self.timeout:g}s")
        if response.message is not None and "error" in response.message:
            raise Fail("prompt-lifecycle.mdx#2-prompt-accepted", f"prompt rejected: {response.message['error']}")
        return start, response

    async def run_turn(self, session_id: str, text: str, *, blocks: Sequence[Any] = ()) -> tuple[int, Frame, Frame]:
        """Prompt, then wait for the response and the idle update (ACP2-050): ``(start, response, idle)``."""
        start, response = await self._turn(session_id, text, blocks)
        return start, response, await self.wait_idle(session_id, start, rule="ACP2-050")

    async def run_turn_settled(
        self, session_id: str, text: str, *, blocks: Sequence[Any] = ()
    ) -> tuple[int, Frame, Frame | None]:
        """Like ``run_turn``, but the turn has also ended once the agent went quiet (see ``settle``)."""
        start, response = await self._turn(session_id, text, blocks)
        return start, response, await self.settle(session_id, start)


@asynccontextmanager
async def spawn_probe(argv: Sequence[str], *, timeout: float) -> AsyncIterator[Probe]:
    """Start the agent, read its stdout into a ``Probe``, and shut it down on exit."""
    env = dict(os.environ)
    async with stdio_agent(
        list(argv), env=env, on_stderr=lambda line: None, grace_period=0.5, terminate_timeout=0.5
    ) as agent:
        probe = Probe(agent, timeout)
        async with anyio.create_task_group() as tg:
            tg.start_soon(probe.read_loop)
            try:
                yield probe
            finally:
                tg.cancel_scope.cancel()
