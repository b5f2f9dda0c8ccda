"""A raw view of one agent process: every stdout line is recorded as it arrived, nothing is hidden.

The runner deliberately does not use ``acp_session.rpc.Connection`` here: checks must see the exact
frames, their order, and anything on stdout that is not a message. Outgoing params are generated
types (v2, or v1 from ``acp_session.schema.v1``); envelopes are the rpc layer's envelope structs.

The probe also plays the client's part of the protocol: it answers permission requests (a reject option,
unless a check answers itself), and with protocol version 1 the agent's ``fs/*`` and ``terminal/*`` calls,
through the library's providers confined to each session's working directory (a temporary sandbox). Every
such call is kept with the problems its params have against the v1 schema and docs, for the checks to judge.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec
from anyio.abc import TaskGroup

from acp_session.codec import decoder, encode, to_builtins
from acp_session.errors import RpcError
from acp_session.providers import LocalFileSystem, LocalTerminals
from acp_session.rpc.messages import ErrorObject, ErrorOut, NotificationOut, RequestOut, ResultOut
from acp_session.schema import v1
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

__all__ = [
    "AUTH_REQUIRED",
    "ClientCall",
    "ErrorAnswer",
    "Fail",
    "Frame",
    "LoginRequired",
    "NotApplicable",
    "Probe",
    "Turn",
    "WireLine",
    "spawn_probe",
]

_json = msgspec.json.Decoder()
AUTH_REQUIRED = -32000
RUNNER_INFO = ("acp-conformance", "0.2.0")


class Fail(Exception):
    """A check failed; ``rule`` names the rule (ACP2-NNN, ACP1-NNN or a schema/docs reference) it violates."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"{rule}: {message}")
        self.rule = rule


class ErrorAnswer(Fail):
    """The agent answered a request with an error where a result was needed; ``code`` is the error's."""

    def __init__(self, rule: str, message: str, code: Any) -> None:
        super().__init__(rule, message)
        self.code = code


class NotApplicable(Exception):
    """The check cannot run against this agent (capability not advertised, no scenario for it, ...)."""


class LoginRequired(Exception):
    """The agent refused ``method`` with -32000 (authentication required)."""

    def __init__(self, method: str, error: Any) -> None:
        message = error.get("message") if isinstance(error, dict) else None
        super().__init__(f"{method} answered {AUTH_REQUIRED} {message!r}" if message else f"{method}: {AUTH_REQUIRED}")
        self.method = method
        self.error = error


@dataclass(frozen=True)
class WireLine:
    """One line of the wire traffic, for a failed check's transcript (long lines shortened)."""

    direction: str  # "sent" (runner to agent) or "received"
    seconds: float  # since the probe started
    line: str

    LIMIT = 4000

    @classmethod
    def of(cls, direction: str, seconds: float, raw: bytes) -> WireLine:
        text = raw.rstrip(b"\n").decode("utf-8", "replace")
        if len(text) > cls.LIMIT:
            text = f"{text[: cls.LIMIT]}... ({len(text)} characters)"
        return cls(direction, round(seconds, 3), text)


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
    def params(self) -> dict[str, Any]:
        params = self.message.get("params") if self.message else None
        return params if isinstance(params, dict) else {}

    @property
    def update(self) -> dict[str, Any] | None:
        """The ``update`` object of a ``session/update`` notification."""
        if self.method != "session/update":
            return None
        update = self.params.get("update")
        return update if isinstance(update, dict) else None

    @property
    def session_id(self) -> Any:
        return self.params.get("sessionId")

    @property
    def error(self) -> dict[str, Any] | None:
        error = self.message.get("error") if self.message else None
        return error if isinstance(error, dict) else None

    @property
    def error_code(self) -> int | None:
        error = self.error
        return error.get("code") if error is not None else None

    @property
    def result(self) -> Any:
        return self.message.get("result") if self.message else None

    def update_kind(self) -> str | None:
        u = self.update
        return u.get("sessionUpdate") if u is not None else None

    def state(self) -> str | None:
        u = self.update
        return u.get("state") if u is not None and u.get("sessionUpdate") == "state_update" else None


@dataclass
class ClientCall:
    """A request the agent sent to the client (fs/*, terminal/*), with what was wrong with it, if anything."""

    frame: Frame
    method: str
    params: dict[str, Any]
    problems: list[str] = field(default_factory=list)  # "rule: message"
    advertised: bool = True  # whether the runner advertised the capability the method needs
    outcome: str = "pending"  # "ok", or "error CODE"
    result: Any = None


@dataclass
class Turn:
    start: int  # frame index when the prompt was sent
    request_id: int
    response: Frame
    end: Frame | None  # v2: the idle update (None when the agent went quiet without one); v1: the response

    @property
    def stop_reason(self) -> Any:
        if self.end is None:
            return None
        source = self.end.update if self.end.method == "session/update" else self.end.result
        return source.get("stopReason") if isinstance(source, dict) else None


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
        return None, "a JSON array (batch); ACP messages are single objects"
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
        "tool_call",
        "tool_call_update",
        "tool_call_content_chunk",
        "plan",
        "plan_update",
        "terminal_update",
        "terminal_output_chunk",
    }
)

# The v1 client methods the runner answers: params type, provider method, what must be advertised.
_V1_CLIENT_METHODS: dict[str, tuple[Any, str, str]] = {
    "fs/read_text_file": (v1.ReadTextFileRequest, "read_text_file", "fs.readTextFile"),
    "fs/write_text_file": (v1.WriteTextFileRequest, "write_text_file", "fs.writeTextFile"),
    "terminal/create": (v1.CreateTerminalRequest, "create_terminal", "terminal"),
    "terminal/output": (v1.TerminalOutputRequest, "terminal_output", "terminal"),
    "terminal/wait_for_exit": (v1.WaitForTerminalExitRequest, "wait_for_terminal_exit", "terminal"),
    "terminal/kill": (v1.KillTerminalRequest, "kill_terminal", "terminal"),
    "terminal/release": (v1.ReleaseTerminalRequest, "release_terminal", "terminal"),
}
_SESSION_OPENERS = frozenset({"session/new", "session/load", "session/resume"})


def client_call_problems(method: str, params: dict[str, Any]) -> list[str]:
    """What the v1 schema and docs object to in the params of an ``fs/*`` or ``terminal/*`` call."""
    problems: list[str] = []
    spec = _V1_CLIENT_METHODS.get(method)
    if spec is None:
        return problems
    doc = "file-system.mdx" if method.startswith("fs/") else "terminals.mdx"
    try:
        decoder(spec[0])(msgspec.json.encode(params))
    except msgspec.ValidationError as exc:
        problems.append(f"schema:{spec[0].__name__}: {method} params do not match the v1 schema: {exc}")
        return problems
    for key in ("path", "cwd"):
        value = params.get(key)
        if isinstance(value, str) and not os.path.isabs(value):
            problems.append(f"overview.mdx: {method} {key} {value!r} is not absolute (all file paths MUST be)")
    if method.startswith("fs/") and not isinstance(params.get("path"), str):
        problems.append(f"{doc}: {method} without a path")
    return problems


def v1_offer(version: int, *, fs: bool, terminal: bool) -> dict[str, Any]:
    """The ``initialize`` params: v2's ``info`` beside v1's ``clientInfo``/``clientCapabilities``, whatever the version.

    Both schemas allow unknown fields, so each version reads its own (as ``ClientBuilder`` offers); a v2-only
    agent offered version 1 can then answer -32022 instead of refusing the shape.
    """
    name, version_text = RUNNER_INFO
    v1_part = to_builtins(
        v1.InitializeRequest(
            protocol_version=1,
            client_capabilities=v1.ClientCapabilities(
                fs=v1.FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=terminal
            ),
            client_info=v1.Implementation(name=name, version=version_text),
        )
    )
    plain: dict[str, Any] = to_builtins(
        InitializeRequest(protocol_version=version, info=Implementation(name=name, version=version_text))
    )
    plain["clientCapabilities"] = v1_part["clientCapabilities"]
    plain["clientInfo"] = v1_part["clientInfo"]
    return plain


class Probe:
    """Send typed messages to one agent process and wait for frames matching predicates."""

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
        self.init_result: dict[str, Any] | None = None
        self.init_index = -1  # the frame of the (first) initialize response
        self.version: int | None = None  # the protocol version the agent answered
        # Answer permission requests automatically (reject / cancelled) unless a check turns it off.
        self.auto_answer_permissions = True
        self.answered: set[Any] = set()
        self.calls: list[ClientCall] = []
        self.advertised: set[str] = set()  # "fs.readTextFile", "fs.writeTextFile", "terminal"
        self.files = LocalFileSystem()
        self.terminals: LocalTerminals | None = None
        self.tg: TaskGroup | None = None
        self._opening: dict[int, tuple[str, dict[str, Any]]] = {}  # request id -> (method, params)
        self.sessions: dict[str, str] = {}  # session id -> cwd, of sessions opened on this connection

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
        self.wire.append(WireLine.of("received", frame.time - self.start, frame.raw or (frame.problem or "").encode()))
        if frame.is_response:
            self._session_opened(frame)
        self._changed.set()
        self._changed = anyio.Event()
        if frame.is_request and frame.problem is None:
            with contextlib.suppress(Fail):  # the agent is gone: the check waiting for it will say so
                await self._agent_request(frame)

    def _session_opened(self, frame: Frame) -> None:
        assert frame.message is not None
        rid = frame.message.get("id")
        opening = self._opening.pop(rid, None) if isinstance(rid, int) else None
        if opening is None or frame.error is not None:
            return
        _method, params = opening
        result = frame.result if isinstance(frame.result, dict) else {}
        session_id = params.get("sessionId") or result.get("sessionId")
        cwd = params.get("cwd")
        if isinstance(session_id, str) and isinstance(cwd, str) and os.path.isabs(cwd):
            self.sessions[session_id] = cwd
            self.files.open_session(session_id, cwd)
            if self.terminals is not None:
                self.terminals.open_session(session_id, cwd)

    async def _agent_request(self, frame: Frame) -> None:
        assert frame.message is not None
        method = frame.method or ""
        if method == "session/request_permission":
            if self.auto_answer_permissions:
                await self._auto_answer(frame)
            return
        if method in _V1_CLIENT_METHODS and self.version == 1 and self.tg is not None:
            self.tg.start_soon(self._client_call, frame)
            return
        await self.respond_error(frame.message["id"], -32601, f"Method not found: {method}")

    async def _client_call(self, frame: Frame) -> None:
        assert frame.message is not None
        method = frame.method or ""
        params = frame.params
        call = ClientCall(frame, method, params, client_call_problems(method, params))
        tp, attribute, capability = _V1_CLIENT_METHODS[method]
        call.advertised = capability in self.advertised
        self.calls.append(call)
        rid = frame.message["id"]
        if not call.advertised or call.problems:
            call.outcome = "error -32601" if not call.advertised else "error -32602"
            with contextlib.suppress(Fail):
                if not call.advertised:
                    await self.respond_error(rid, -32601, f"Method not found: {method} (not advertised)")
                else:
                    await self.respond_error(rid, -32602, "Invalid params")
            return
        provider: Any = self.files if method.startswith("fs/") else self.terminals
        try:
            request = decoder(tp)(msgspec.json.encode(params))
            result = await getattr(provider, attribute)(request)
        except RpcError as exc:
            call.outcome = f"error {exc.code}"
            await self.respond_error(rid, exc.code, exc.message, exc.data)
            return
        except Exception as exc:
            call.outcome = "error -32603"
            await self.respond_error(rid, -32603, f"Internal error: {type(exc).__name__}")
            return
        call.outcome = "ok"
        call.result = to_builtins(result)
        with contextlib.suppress(Fail):
            await self.respond(rid, result)

    async def _auto_answer(self, frame: Frame) -> None:
        assert frame.message is not None
        options = frame.params.get("options") or []
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

    async def request(self, method: str, params: Any = None) -> int:
        self._next_id += 1
        if method in _SESSION_OPENERS:
            plain = to_builtins(params)
            self._opening[self._next_id] = (method, plain if isinstance(plain, dict) else {})
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

    # -- ACP shortcuts ---------------------------------------------------------------------------------

    @property
    def capabilities(self) -> dict[str, Any]:
        """v2 ``capabilities`` or v1 ``agentCapabilities`` of the initialize answer."""
        result = self.init_result or {}
        caps = result.get("capabilities" if self.version != 1 else "agentCapabilities")
        return caps if isinstance(caps, dict) else {}

    @property
    def agent_info(self) -> dict[str, Any]:
        result = self.init_result or {}
        info = result.get("info" if self.version != 1 else "agentInfo")
        return info if isinstance(info, dict) else {}

    @property
    def auth_methods(self) -> list[Any]:
        methods = (self.init_result or {}).get("authMethods")
        return methods if isinstance(methods, list) else []

    def session_capability(self, name: str) -> Any:
        """A session capability: v2 ``capabilities.session.NAME``, v1 ``agentCapabilities.sessionCapabilities.NAME``."""
        session = self.capabilities.get("session" if self.version != 1 else "sessionCapabilities")
        return session.get(name) if isinstance(session, dict) else None

    async def initialize(self, version: int = 2, *, fs: bool = True, terminal: bool = True) -> dict[str, Any]:
        """Offer ``version`` (with v1's client capabilities beside v2's fields) and record the answer."""
        self.advertised = ({"fs.readTextFile", "fs.writeTextFile"} if fs else set()) | (
            {"terminal"} if terminal else set()
        )
        result = await self.call_ok(
            "initialize", v1_offer(version, fs=fs, terminal=terminal), rule="initialization.mdx#initialization"
        )
        if not isinstance(result, dict):
            raise Fail("schema:InitializeResponse", f"initialize result is not an object: {result!r}")
        self.init_result = result
        answered = result.get("protocolVersion")
        self.version = answered if isinstance(answered, int) and not isinstance(answered, bool) else None
        return result

    async def login(self, method_id: str) -> Any:
        """Log in with an advertised method: v1 ``authenticate``, v2 ``auth/login``."""
        if self.version == 1:
            return await self.call_ok(
                "authenticate", v1.AuthenticateRequest(method_id=method_id), rule="authentication.mdx"
            )
        return await self.call_ok("auth/login", {"methodId": method_id}, rule="authentication.mdx")

    def new_session_params(self, cwd: str, **extra: Any) -> Any:
        if self.version == 1:
            return v1.NewSessionRequest(cwd=cwd, mcp_servers=extra.pop("mcp_servers", []), **extra)
        return NewSessionRequest(cwd=cwd, **extra)

    async def new_session(self, cwd: str) -> str:
        result = await self.call_ok("session/new", self.new_session_params(cwd), rule="session-setup.mdx")
        session_id = result.get("sessionId") if isinstance(result, dict) else None
        if not isinstance(session_id, str) or not session_id:
            raise Fail("schema:NewSessionResponse.sessionId", f"session/new gave no session id: {result!r}")
        return session_id

    async def prompt(self, session_id: str, text: str, blocks: Sequence[Any] = ()) -> int:
        prompt = list(blocks) or [TextContent(text=text)]
        if self.version == 1:
            return await self.request("session/prompt", v1.PromptRequest(session_id=session_id, prompt=prompt))
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

    def is_request_for(self, method: str) -> Callable[[Frame], bool]:
        return lambda f: f.is_request and f.method == method

    async def wait_idle(self, session_id: str, start: int, *, rule: str, timeout: float | None = None) -> Frame:
        frame = await self.wait_for(self.is_state(session_id, "idle"), timeout, start)
        if frame is None:
            raise Fail(rule, f"no idle state_update within {self.timeout if timeout is None else timeout:g}s")
        return frame

    async def settle(
        self, session_id: str, start: int, quiet: float = 0.5, timeout: float | None = None
    ) -> Frame | None:
        """Wait for the idle update, or until the agent has been silent for ``quiet`` seconds.

        For checks whose subject is not the idle update itself (the ``turn-lifecycle`` check reports a
        missing idle), so one defect does not fail every check that happens to run a turn. A healthy agent
        sends the idle update and this returns at once.
        """
        deadline = anyio.current_time() + (self.timeout if timeout is None else timeout)
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

    async def send_turn(
        self, session_id: str, text: str, *, blocks: Sequence[Any] = (), timeout: float | None = None
    ) -> tuple[int, int, Frame]:
        """Prompt and wait for the response: ``(start mark, request id, response)``.

        v2 answers once the prompt is inserted, v1 when the turn is over. -32000 raises ``LoginRequired``;
        another error fails naming the prompt rules of the negotiated version.
        """
        start = self.mark
        rid = await self.prompt(session_id, text, blocks)
        response = await self.response(rid, timeout, start=start)
        limit = self.timeout if timeout is None else timeout
        if response is None:
            rule = "ACP2-064" if self.version != 1 else "prompt-turn.mdx#4-check-for-completion"
            raise Fail(rule, f"no response to session/prompt within {limit:g}s")
        if response.error is not None:
            if response.error_code == AUTH_REQUIRED:
                raise LoginRequired("session/prompt", response.error)
            rule = "prompt-lifecycle.mdx#2-prompt-accepted" if self.version != 1 else "ACP1-012"
            raise Fail(rule, f"prompt {text[:40]!r} rejected: {response.error}")
        return start, rid, response

    async def run_turn(
        self,
        session_id: str,
        text: str,
        *,
        blocks: Sequence[Any] = (),
        timeout: float | None = None,
        settle: bool = True,
    ) -> Turn:
        """A whole turn: v2 prompt, response and idle update (``settle``: or the agent going quiet, see
        ``settle``); v1 prompt and its response."""
        start, rid, response = await self.send_turn(session_id, text, blocks=blocks, timeout=timeout)
        if self.version == 1:
            return Turn(start, rid, response, response)
        if settle:
            return Turn(start, rid, response, await self.settle(session_id, start, timeout=timeout))
        return Turn(start, rid, response, await self.wait_idle(session_id, start, rule="ACP2-050", timeout=timeout))


@asynccontextmanager
async def spawn_probe(
    argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None, startup_timeout: float = 20.0
) -> AsyncIterator[Probe]:
    """Start the agent, read its stdout into a ``Probe``, and shut it down (and its terminals) on exit."""
    async with AsyncExitStack() as stack:
        agent = await stack.enter_async_context(
            stdio_agent(
                list(argv),
                env=dict(os.environ if env is None else env),
                on_stderr=lambda line: None,
                grace_period=0.5,
                terminate_timeout=0.5,
            )
        )
        probe = await read_into_probe(stack, agent, timeout, startup_timeout)
        try:
            yield probe
        finally:
            assert probe.tg is not None
            probe.tg.cancel_scope.cancel()


async def read_into_probe(stack: AsyncExitStack, agent: Any, timeout: float, startup_timeout: float) -> Probe:
    """A ``Probe`` on ``agent`` (a process, or anything with its ``receive``/``send``) with its terminals and its
    read loop running in a task group on ``stack``; the caller cancels ``probe.tg`` when done."""
    probe = Probe(agent, timeout, startup_timeout)
    probe.terminals = await stack.enter_async_context(LocalTerminals())
    tg = await stack.enter_async_context(anyio.create_task_group())
    probe.tg = tg
    tg.start_soon(probe.read_loop)
    return probe
