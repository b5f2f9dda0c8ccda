"""A raw view of one agent process (``Probe``), playing the client's part of the protocol.

The wire itself (every stdout line recorded as it arrived, nothing hidden; our requests, answers and waits) is
``wire.Wire``. On top of it the probe answers the agent's requests as a client does: permission requests (a reject
option, unless a check answers itself), and with protocol version 1 the agent's ``fs/*`` and ``terminal/*`` calls,
through the library's providers confined to each session's working directory (a temporary sandbox). Every such
call is kept with the problems its params have against the v1 schema and docs (``client_calls``), for the checks
to judge. Its shortcuts speak ACP: initialize, log in, open a session, run a turn. Outgoing params are generated
types (v2, or v1 from ``acp_session.schema.v1``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import msgspec
from anyio.abc import TaskGroup

from acp_session.codec import decoder, to_builtins
from acp_session.errors import RpcError
from acp_session.providers import LocalFileSystem, LocalTerminals
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
from acp_session.transport import AgentProcess, stdio_agent

from .client_calls import ELICITATION, V1_CLIENT_METHODS, ClientCall, client_call_problems
from .frames import OUTPUT_KINDS, Frame, Turn, WireLine
from .outcomes import AUTH_REQUIRED, ErrorAnswer, Fail, LoginRequired, NotApplicable
from .wire import Wire

# What the checks and the remote modules have always imported from here lives in outcomes, frames and
# client_calls; the names stay importable from this module.
__all__ = [
    "AUTH_REQUIRED",
    "OUTPUT_KINDS",
    "ClientCall",
    "ErrorAnswer",
    "Fail",
    "Frame",
    "LoginRequired",
    "NotApplicable",
    "Probe",
    "Turn",
    "WireLine",
    "read_into_probe",
    "spawn_probe",
    "v1_offer",
]

RUNNER_INFO = ("acp-conformance", "0.2.0")
_SESSION_OPENERS = frozenset({"session/new", "session/load", "session/resume"})


def v1_offer(version: int, *, fs: bool, terminal: bool, elicitation: bool = False) -> dict[str, Any]:
    """The ``initialize`` params offering ``version``, in that version's shape only: v2's ``info`` and
    ``capabilities``, or v1's ``clientInfo`` and ``clientCapabilities`` (with the file system and terminals as
    asked). Never both: the extensibility rules keep custom data out of the root of a specified type. A v1 agent
    that answers 1 to the v2 offer gets the v1 offer next (``Probe.initialize``), as ``ClientBuilder`` does.
    ``elicitation``: form elicitation is offered too (only the v1 check of that gate does)."""
    name, version_text = RUNNER_INFO
    plain: dict[str, Any]
    if version == 1:
        plain = to_builtins(
            v1.InitializeRequest(
                protocol_version=1,
                client_capabilities=v1.ClientCapabilities(
                    fs=v1.FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=terminal
                ),
                client_info=v1.Implementation(name=name, version=version_text),
            )
        )
    else:
        plain = to_builtins(
            InitializeRequest(protocol_version=version, info=Implementation(name=name, version=version_text))
        )
    if elicitation:  # the same object in both versions, under each one's capabilities field
        plain.setdefault("clientCapabilities" if version == 1 else "capabilities", {})["elicitation"] = {"form": {}}
    return plain


class Probe(Wire):
    """Plays the client for one agent process: answers its requests, and speaks ACP in shortcuts for the checks."""

    def __init__(self, agent: AgentProcess, timeout: float, startup_timeout: float = 20.0) -> None:
        super().__init__(agent, timeout, startup_timeout)
        self.init_result: dict[str, Any] | None = None
        self.version: int | None = None  # the protocol version the agent answered
        # Answer permission requests automatically (reject / cancelled) unless a check turns it off.
        self.auto_answer_permissions = True
        self.calls: list[ClientCall] = []
        self.advertised: set[str] = set()  # "fs.readTextFile", "fs.writeTextFile", "terminal"
        self.files = LocalFileSystem()
        self.terminals: LocalTerminals | None = None
        self.tg: TaskGroup | None = None
        self._opening: dict[int, tuple[str, dict[str, Any]]] = {}  # request id -> (method, params)
        self.sessions: dict[str, str] = {}  # session id -> cwd, of sessions opened on this connection
        self.sent_methods: dict[int, str] = {}  # request id -> method, of every request sent (a response's method)
        self.stderr_counter: StderrCounter | None = None  # counts the agent's stderr (a process of ours only)
        self.memo: dict[str, Any] = {}  # exchanges several checks judge, run once per process (checks/v1/base.py)
        self.prompted: list[tuple[int, str, int]] = []  # (request id, session id, frame mark) of each session/prompt
        self.cancelled: list[str] = []  # the session of each session/cancel sent

    # -- the client's part -----------------------------------------------------------------------------

    def _requesting(self, request_id: int, method: str, params: Any) -> None:
        self.sent_methods[request_id] = method
        if method == "session/prompt":
            plain = to_builtins(params)
            session_id = plain.get("sessionId") if isinstance(plain, dict) else None
            self.prompted.append((request_id, str(session_id), self.mark))
        if method in _SESSION_OPENERS:
            plain = to_builtins(params)
            self._opening[request_id] = (method, plain if isinstance(plain, dict) else {})

    def _response_arrived(self, frame: Frame) -> None:
        """A session opened (new, load, resume): its cwd becomes the sandbox of its v1 fs/* and terminal/* calls."""
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
        if method in V1_CLIENT_METHODS and self.version == 1 and self.tg is not None:
            self.tg.start_soon(self._client_call, frame)
            return
        if method == ELICITATION and self.version == 1:
            await self._elicitation(frame)
            return
        await self.respond_error(frame.message["id"], -32601, f"Method not found: {method}")

    async def _client_call(self, frame: Frame) -> None:
        assert frame.message is not None
        method = frame.method or ""
        params = frame.params
        call = ClientCall(frame, method, params, client_call_problems(method, params))
        tp, attribute, capability = V1_CLIENT_METHODS[method]
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

    async def _elicitation(self, frame: Frame) -> None:
        """v1 ``elicitation/create``: kept as a call (the gate's check judges it), declined when form elicitation
        was offered, else -32601 (the client has no such method)."""
        assert frame.message is not None
        call = ClientCall(frame, ELICITATION, frame.params, client_call_problems(ELICITATION, frame.params))
        call.advertised = "elicitation.form" in self.advertised
        self.calls.append(call)
        if call.advertised:
            call.outcome = "ok"
            await self.respond(frame.message["id"], {"action": "decline"})
        else:
            call.outcome = "error -32601"
            await self.respond_error(frame.message["id"], -32601, f"Method not found: {ELICITATION} (not advertised)")

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

    # -- ACP shortcuts ---------------------------------------------------------------------------------

    @property
    def stderr_bytes(self) -> int | None:
        """Bytes the agent has written to stderr so far (None when it is not a process of ours: ``--url``)."""
        return self.stderr_counter.bytes if self.stderr_counter is not None else None

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

    async def initialize(
        self, version: int = 2, *, fs: bool = True, terminal: bool = True, elicitation: bool = False
    ) -> dict[str, Any]:
        """Offer ``version`` in its own shape and record the answer. An agent that answers 1 to a newer offer gets
        the v1 offer next, with the file system and terminals (and elicitation) as asked (the v2 offer has no place
        for fs and terminals); one that refuses a second ``initialize`` keeps its first answer and is taken to know
        none of them."""
        self.advertised = (
            ({"fs.readTextFile", "fs.writeTextFile"} if fs else set())
            | ({"terminal"} if terminal else set())
            | ({"elicitation.form"} if elicitation else set())
        )
        result = await self._initialize_with(v1_offer(version, fs=fs, terminal=terminal, elicitation=elicitation))
        if version != 1 and self.version == 1:
            offer = v1_offer(1, fs=fs, terminal=terminal, elicitation=elicitation)
            frame = await self.call("initialize", offer, rule="initialization.mdx")
            if frame.error is None and isinstance(frame.result, dict):
                result = self._answered(frame.result)
                self.init_index = frame.index
            else:
                self.advertised = set()  # it never saw the v1 offer's capabilities
        return result

    async def _initialize_with(self, params: dict[str, Any]) -> dict[str, Any]:
        result = await self.call_ok("initialize", params, rule="initialization.mdx#initialization")
        if not isinstance(result, dict):
            raise Fail("schema:InitializeResponse", f"initialize result is not an object: {result!r}")
        return self._answered(result)

    def _answered(self, result: dict[str, Any]) -> dict[str, Any]:
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

    async def notify(self, method: str, params: Any = None) -> None:
        if method == "session/cancel":
            plain = to_builtins(params)
            self.cancelled.append(str(plain.get("sessionId") if isinstance(plain, dict) else None))
        await super().notify(method, params)

    def turn_marks(self) -> tuple[int, int]:
        """Where the prompts and cancels sent from now on begin, for ``turns_running``."""
        return len(self.prompted), len(self.cancelled)

    def turns_running(self, since: tuple[int, int] = (0, 0)) -> list[str]:
        """The sessions cancelled since ``since`` (``turn_marks``) whose turn may still run: its prompt unanswered
        (a v1 turn, or a v2 prompt not yet accepted), or (v2) its last state update says running or
        requires_action. Such a turn (the agent ignored the cancel) goes on sending updates, which must not land
        in the next check's turn."""
        cancelled = set(self.cancelled[since[1] :])
        running = []
        for rid, session_id, start in self.prompted[since[0] :]:
            if session_id not in cancelled:
                continue
            frames = self.frames[start:]
            answered = any(f.is_response and f.message is not None and f.message.get("id") == rid for f in frames)
            states = [f.state() for f in frames if f.session_id == session_id and f.state() is not None]
            if not answered or (self.version != 1 and states and states[-1] in ("running", "requires_action")):
                running.append(session_id)
        return running

    async def turns_ended(self, since: tuple[int, int], grace: float) -> bool:
        """Whether every turn cancelled since ``since`` has ended, waiting up to ``grace`` seconds for the last
        ones (a turn the check cancelled just before it returned ends in a moment)."""
        with anyio.move_on_after(grace):
            while self.turns_running(since) and not self.eof:
                await self.wait_for(lambda _: True, grace, self.mark)
        return not self.turns_running(since)

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


class StderrCounter:
    """Counts the bytes of the agent's stderr lines as they are read."""

    def __init__(self) -> None:
        self.bytes = 0

    def line(self, text: str) -> None:
        self.bytes += len(text.encode("utf-8", "replace")) + 1


@asynccontextmanager
async def spawn_probe(
    argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None, startup_timeout: float = 20.0
) -> AsyncIterator[Probe]:
    """Start the agent, read its stdout into a ``Probe``, and shut it down (and its terminals) on exit."""
    async with AsyncExitStack() as stack:
        counter = StderrCounter()
        agent = await stack.enter_async_context(
            stdio_agent(
                list(argv),
                env=dict(os.environ if env is None else env),
                on_stderr=counter.line,
                grace_period=0.5,
                terminate_timeout=0.5,
            )
        )
        probe = await read_into_probe(stack, agent, timeout, startup_timeout)
        probe.stderr_counter = counter
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
