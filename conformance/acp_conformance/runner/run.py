"""Run the checks: decide the check set from the negotiated version, share agent processes, collect results.

One agent process is started first (the preflight): its ``initialize`` answer picks the check set (protocol v1
or v2), its name may select the reference agent's scenario file, ``--auth`` logs in, and one ``session/new``
tells whether the agent refuses sessions for lack of a login (then the checks that need a session are not
run, and the report says why once). After that ``jobs`` workers take checks from a queue. A worker keeps its
agent process for the next check (each check opens its own sessions in its own sandbox directory); a check
that failed, timed out, lost the agent, or cancelled a turn that still runs a moment later (an agent that
ignores cancels) gets the process replaced, so one defect does not spill into the next check. Checks marked
``fresh`` (their own ``initialize``) get a process of their own.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio

from acp_session.auth import login_methods
from acp_session.transport.remote import RemoteDialer

from .checks import CHECK_SETS
from .checks_remote import remote_checks_for
from .excerpt import transcript_for
from .frames import WireLine
from .outcomes import ErrorAnswer, Fail, LoginRequired, NotApplicable
from .probe import Probe, spawn_probe
from .registry import Check, CheckContext, in_report_order, missing_scenario
from .remote_agent import connect_probe, connection_lost, unreachable
from .remote_run import REMOTE_ONLY_OVER_STDIO, RemoteResult, remote_not_run, run_remote_checks
from .scenarios import NO_SCENARIOS, REFERENCE_SCENARIOS, Scenarios, load_scenarios
from .selection import Selection
from .tiers import classify

__all__ = ["STARTUP_TIMEOUT", "CheckResult", "LoginBlock", "RunOptions", "RunReport", "run", "run_checks"]

STARTUP_TIMEOUT = 30.0
REFERENCE_AGENT = "acp-reference-agent"
LOGIN_SKIP = "not run: the agent requires a login (see the login notice)"
SESSION_SKIP = "not run: the agent opens no session (see session-new)"
TRANSCRIPT_LINES = 200  # the last lines of a failed check's wire traffic kept in the report


@dataclass
class CheckResult:
    id: str
    title: str
    rules: tuple[str, ...]
    status: str  # "pass", "fail", "warn" (passed, but a SHOULD is not followed) or "n/a"
    message: str
    seconds: float
    area: str = ""
    scenarios: list[str] = field(default_factory=list)  # "name: 'prompt'" of each scenario the check used
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    blocked: str | None = None  # "login" / "session": not run because the agent wants a login / opens no session
    transcript: list[WireLine] = field(default_factory=list)  # for a failure: the check's wire traffic
    offending: int | None = None  # for a failure: the index in ``transcript`` of the line it is about
    stderr_tail: list[str] = field(default_factory=list)  # for a failure: the agent's last stderr lines


@dataclass
class RunOptions:
    argv: Sequence[str]
    env: Mapping[str, str] | None = None  # the agent's environment (None: this process's)
    offer: int = 2  # the protocol version offered at initialize
    auth: str | None = None  # log in with this method before checking
    scenarios: Scenarios | None = None  # None: the reference agent's own file for the reference agent, else none
    wait: float = 10.0  # seconds to wait for one answer, one turn, one cancellation
    jobs: int = 4
    only: Sequence[str] = ()  # --check: only these checks
    areas: Sequence[str] = ()  # --area: only the checks of these rule areas
    tiers: Sequence[str] = ()  # --tier: only the checks of these tiers
    startup_timeout: float = STARTUP_TIMEOUT
    dialer: RemoteDialer | None = None  # --url: a remote agent (``argv`` is then only what the report shows)


@dataclass
class LoginBlock:
    """The agent refused ``method`` for lack of a login."""

    method: str
    error: Any
    methods: list[str]  # how to log in, one line each

    def message(self) -> str:
        text = self.error.get("message") if isinstance(self.error, dict) else None
        return f"{self.method} answered -32000 {text!r}" if text else f"{self.method} answered -32000"


@dataclass
class RunReport:
    argv: Sequence[str]
    results: list[CheckResult]
    version: int | None = None  # the negotiated protocol version (the check set)
    agent: dict[str, Any] = field(default_factory=dict)  # the agent's name and version, as it gave them
    scenarios: Scenarios = NO_SCENARIOS
    login: LoginBlock | None = None
    session_error: str | None = None  # why the first session/new failed (not for lack of a login)
    problem: str | None = None  # why the agent could not be checked at all
    check_set: int = 2  # the version whose checks the results are (the offered one when none was agreed)
    version_mismatch: bool = False  # the agent speaks no version the runner offered (or not --expect-version's)
    expected_version: int | None = None  # --expect-version
    seconds: float = 0.0
    processes: int = 0  # agent processes started (with --url: connections opened)
    remote: bool = False  # --url: a remote agent (no processes of its own)
    selection: str = ""  # the options that chose a subset (--check, --area, --tier), as typed
    not_selected: list[str] = field(default_factory=list)  # the check set's checks the selection left out


class _Startup(Exception):
    """The agent could not be started, initialized or logged in: ``rule``-prefixed when it is the agent's fault."""


def _describe_methods(raw: Sequence[Any]) -> list[str]:
    lines = []
    for method in login_methods(raw):
        how = {"agent": "over ACP: --auth " + method.method_id}.get(method.kind)
        if method.kind == "env_var":
            how = f"--auth {method.method_id} with {' or '.join(method.env_vars) or 'its variables'} set"
        elif method.kind == "terminal" or method.login_command:
            how = "in a terminal, outside the runner (then rerun)"
        lines.append(f"{method.method_id} ({method.kind}): {method.name}; {how or 'unknown shape'}")
    return lines


class _Run:
    def __init__(self, options: RunOptions, root: str) -> None:
        self.options = options
        self.root = root
        self.report = RunReport(options.argv, [], remote=options.dialer is not None)
        self.chosen = Selection.of(options.only, options.areas, options.tiers)
        self.checks: list[Check] = []
        self.queue: list[Check] = []
        self.results: dict[str, CheckResult] = {}
        self.ready = anyio.Event()
        self.offer = options.offer
        self.unreachable = False  # --url: the agent could not be reached at all, so no transport row can run

    # -- processes ---------------------------------------------------------------------------------------

    async def open_probe(self, stack: AsyncExitStack, *, initialize: bool) -> Probe:
        self.report.processes += 1
        probe = await stack.enter_async_context(self.connect())
        if initialize:
            await probe.initialize(self.offer)
            if self.options.auth is not None:
                await probe.login(self.options.auth)
        return probe

    def connect(self) -> AbstractAsyncContextManager[Probe]:
        """A new agent: a process over stdio, or with ``--url`` a new connection to the remote agent."""
        options = self.options
        if options.dialer is not None:
            return connect_probe(options.dialer, timeout=options.wait, startup_timeout=options.startup_timeout)
        return spawn_probe(options.argv, timeout=options.wait, env=options.env, startup_timeout=options.startup_timeout)

    @asynccontextmanager
    async def extra_probe(self) -> AsyncIterator[Probe]:
        """Another agent process for a check that needs a second ``initialize`` (not initialized yet)."""
        async with AsyncExitStack() as stack:
            yield await self.open_probe(stack, initialize=False)

    def sandbox(self, name: str) -> str:
        path = os.path.join(self.root, name)
        os.makedirs(path, exist_ok=True)
        return path

    # -- preflight ---------------------------------------------------------------------------------------

    async def preflight(self, stack: AsyncExitStack) -> Probe | None:
        """Start the first agent process and decide what to check; None when nothing can be checked."""
        options = self.options
        try:
            self.report.processes += 1
            probe = await stack.enter_async_context(self.connect())
        except Exception as exc:  # not started / not reachable
            if self.options.dialer is not None:
                self.unreachable = unreachable(exc) is not None
            self.fail_startup(unreachable(exc) or f"could not start the agent: {exc}")
            return None
        try:
            await probe.initialize(self.offer)
        except Fail as failed:
            reason = connection_lost(probe.agent) or failed  # a remote connection's end says more than its EOF
            dialer = self.options.dialer
            # Over HTTP the initialize POST is what connects (a WebSocket connected above): no answer at all.
            over_http = dialer is not None and dialer.profile == "http"
            problem = unreachable(reason) if over_http else None
            if problem is None and over_http and reason is failed and not probe.frames:
                # Nothing came back, not even a status: each transport row would wait as long.
                problem = f"the agent did not answer initialize within {options.startup_timeout:g}s"
            if problem is not None:
                self.unreachable = True
                self.fail_startup(problem)
                return None
            if isinstance(reason, ErrorAnswer) and reason.code == -32022:
                # The right answer from an agent without a version at or below the offer: nothing to check.
                self.report.version_mismatch = True
                self.fail_startup(f"the agent does not speak protocol version {self.offer} or older: {reason}")
                return None
            await self.fail_initialize(probe, reason)
            return None
        except Exception as exc:  # the agent is gone
            await self.fail_initialize(probe, exc)
            return None
        version = probe.version
        self.report.agent = probe.agent_info
        if version not in CHECK_SETS or (version is not None and version > self.offer):
            self.report.version_mismatch = True
            self.fail_startup(
                f"initialization.mdx#version-negotiation: offered version {self.offer}, the agent answered "
                f"{probe.init_result.get('protocolVersion') if probe.init_result else None!r}",
                rule=True,
                check="protocol-version",
            )
            return None
        assert version is not None
        self.report.version = version
        self.choose_scenarios(probe)
        if options.auth is not None:
            try:
                await self.login(probe, options.auth)
            except _Startup as exc:
                self.fail_startup(str(exc))
                return None
        try:
            await probe.new_session(self.sandbox("preflight"))
        except LoginRequired as exc:
            self.report.login = LoginBlock(exc.method, exc.error, _describe_methods(probe.auth_methods))
        except Fail as exc:
            # Only session-new reports it; the other checks that need a session would repeat it.
            self.report.session_error = str(exc)
        return probe

    async def fail_initialize(self, probe: Probe, exc: Exception) -> None:
        with anyio.move_on_after(0.5):  # its exit code and last words, if it is exiting
            while probe.agent.returncode is None:
                await anyio.sleep(0.02)
        code = probe.agent.returncode
        tail = "; ".join(probe.agent.stderr_tail[-5:])
        detail = "".join([f" (exit code {code})" if code is not None else "", f" (stderr: {tail})" if tail else ""])
        self.fail_startup(f"{exc}{detail}", rule=True)

    def choose_scenarios(self, probe: Probe) -> None:
        scenarios = self.options.scenarios
        if scenarios is None:
            is_reference = probe.agent_info.get("name") == REFERENCE_AGENT and REFERENCE_SCENARIOS.is_file()
            scenarios = load_scenarios(REFERENCE_SCENARIOS) if is_reference else NO_SCENARIOS
        self.report.scenarios = scenarios

    async def login(self, probe: Probe, method_id: str) -> None:
        known = {m.method_id: m for m in login_methods(probe.auth_methods)}
        method = known.get(method_id)
        if method is None:
            listed = ", ".join(known) or "none"
            raise _Startup(f"--auth {method_id}: not one of the agent's login methods ({listed})")
        env = os.environ if self.options.env is None else self.options.env
        if method.kind == "env_var" and method.env_vars and not any(env.get(v) for v in method.env_vars):
            raise _Startup(
                f"--auth {method_id} reads {' or '.join(method.env_vars)}: set it (or pass --env NAME=VALUE)"
            )
        if not method.is_protocol_login:
            raise _Startup(f"--auth {method_id}: a {method.kind} login runs outside ACP; log in first, then rerun")
        try:
            await probe.login(method_id)
        except (Fail, LoginRequired) as exc:
            raise _Startup(f"logging in with {method_id} failed: {exc}") from None

    def fail_startup(self, message: str, *, rule: bool = False, check: str = "initialize") -> None:
        """Nothing can be checked: ``message`` says why; with ``rule`` it is the agent's fault, reported on ``check``
        (``initialize`` when the check set has no such check, as v1's has no ``protocol-version``)."""
        self.report.problem = message
        self.select(self.offer if self.report.version is None else self.report.version)
        ids = {c.id for c in self.checks}
        first = check if check in ids else "initialize" if "initialize" in ids else None
        for c in self.checks:
            if c.id == first and rule:
                self.results[c.id] = self.result(c, "fail", message, 0.0)
            else:
                self.results[c.id] = self.result(c, "n/a", f"not run: {message}", 0.0)

    def select(self, version: int) -> None:
        """The checks of ``version``'s set that the selection chooses; the rest are recorded as not selected."""
        self.report.check_set = version
        every = in_report_order(CHECK_SETS[version])
        if self.options.dialer is not None:
            every = [c for c in every if c.id not in REMOTE_ONLY_OVER_STDIO]
        self.checks = [c for c in every if self.chosen.chooses(c.id, c.area, classify(version, c.id).tier.value)]
        chosen = {c.id for c in self.checks}
        self.report.selection = self.chosen.describe()
        self.report.not_selected = [c.id for c in every if c.id not in chosen]

    # -- checks ------------------------------------------------------------------------------------------

    @staticmethod
    def result(c: Check, status: str, message: str, seconds: float, ctx: CheckContext | None = None) -> CheckResult:
        return CheckResult(
            c.id,
            c.title,
            c.rules,
            status,
            message,
            seconds,
            area=c.area,
            scenarios=[s.describe() for s in ctx.used] if ctx is not None else [],
            warnings=list(ctx.warnings) if ctx is not None else [],
            notes=list(ctx.notes) if ctx is not None else [],
        )

    def skip_reason(self, c: Check) -> str | None:
        login = self.report.login
        if login is not None and (c.prompts if login.method == "session/prompt" else c.needs_session):
            return LOGIN_SKIP
        if self.report.session_error is not None and c.needs_session and c.id != "session-new":
            return SESSION_SKIP
        if c.one_of_scenarios and not any(name in self.report.scenarios for name in c.optional_scenarios):
            names = " or ".join(c.optional_scenarios)
            where = (
                f"add one to {self.report.scenarios.source}"
                if self.report.scenarios.source
                else "pass --scenarios FILE"
            )
            return f"needs the {names} scenario: {where}"
        missing = [name for name in c.scenarios if name not in self.report.scenarios]
        if missing:
            return missing_scenario(missing[0], self.report.scenarios)
        return None

    async def execute(self, c: Check, probe: Probe, cwd: str) -> tuple[CheckResult, bool]:
        """Run one check on ``probe``: its result, and whether the process may serve the next check."""
        ctx = CheckContext(
            probe,
            cwd,
            self.report.scenarios,
            self.options.wait,
            offer=self.offer,
            auth=self.options.auth,
            spawn=self.extra_probe,
        )
        probe.auto_answer_permissions = True
        probe.timeout = self.options.wait
        limit = c.time_limit(self.options.wait, self.report.scenarios)
        wire_start = len(probe.wire)
        turns = probe.turn_marks()
        started = time.monotonic()
        healthy = True
        named: bytes | str | None = None  # the offending line, when the check names it
        try:
            with anyio.fail_after(limit):
                note = await c.fn(ctx)
                if probe.eof and not c.ends_process:
                    raise Fail("transports.mdx#stdio", "the agent closed stdout (exited) during the check")
        except Fail as exc:
            status, message, healthy, named = "fail", str(exc), False, exc.offending
        except NotApplicable as exc:
            status, message = "n/a", str(exc)
        except LoginRequired as exc:
            status, message = "n/a", f"{LOGIN_SKIP}: {exc}"
            if self.report.login is None:
                self.report.login = LoginBlock(exc.method, exc.error, _describe_methods(probe.auth_methods))
        except TimeoutError:
            status, message, healthy = "fail", f"{c.rules[0]}: the check did not finish within {limit:g}s", False
        except Exception as exc:  # a bug in a check, or an agent answer of an unexpected shape
            status, message, healthy = "fail", f"{c.rules[0]}: unexpected {type(exc).__name__}: {exc}", False
        else:
            status = "warn" if ctx.warnings else "pass"
            message = "; ".join([*([note] if note else []), *ctx.notes])
        if status == "n/a" and ctx.notes:
            message = "; ".join([message, *ctx.notes])
        if status == "warn":
            message = "; ".join([*ctx.warnings, *([message] if message else [])])
        if probe.eof or (healthy and not await probe.turns_ended(turns, min(1.0, self.options.wait))):
            healthy = False  # gone, or a turn of this check still runs (its updates would land in the next check)
        result = self.result(c, status, message, time.monotonic() - started, ctx)
        if status == "fail":
            excerpt_start = min(wire_start, ctx.transcript_from if ctx.transcript_from is not None else wire_start)
            result.transcript, result.offending = transcript_for(
                probe.wire, excerpt_start, TRANSCRIPT_LINES, message, named
            )
            result.stderr_tail = list(probe.agent.stderr_tail)
        result.blocked = "login" if message.startswith(LOGIN_SKIP) else None
        return result, healthy

    async def fresh(self, c: Check) -> CheckResult:
        started = time.monotonic()
        try:
            async with AsyncExitStack() as stack:
                probe = await self.open_probe(stack, initialize=False)
                result, _ = await self.execute(c, probe, self.sandbox(c.id))
        except Exception as exc:  # the process did not start
            result = self.result(c, "fail", f"could not start the agent: {exc}", 0.0)
        result.seconds = time.monotonic() - started
        return result

    async def worker(self, number: int) -> None:
        async with AsyncExitStack() as outer:
            probe: Probe | None = None
            stack: AsyncExitStack | None = None
            if number == 0:
                stack = AsyncExitStack()
                await outer.enter_async_context(stack)
                probe = await self.preflight(stack)
                if self.report.problem is None:
                    self.plan()
                self.ready.set()
            else:
                await self.ready.wait()
            while self.queue:
                c = self.queue.pop(0)
                reason = self.skip_reason(c)
                if reason is not None:
                    self.results[c.id] = self.result(c, "n/a", reason, 0.0)
                    self.results[c.id].blocked = {LOGIN_SKIP: "login", SESSION_SKIP: "session"}.get(reason)
                    continue
                if c.fresh:
                    self.results[c.id] = await self.fresh(c)
                    continue
                if probe is None:
                    stack = AsyncExitStack()
                    await outer.enter_async_context(stack)
                    try:
                        probe = await self.open_probe(stack, initialize=True)
                    except Exception as exc:  # it did not start, answer initialize or log in this time
                        self.results[c.id] = self.result(
                            c, "fail", f"could not start another agent process: {exc}", 0.0
                        )
                        await stack.aclose()
                        probe = stack = None
                        continue
                result, healthy = await self.execute(c, probe, self.sandbox(c.id))
                self.results[c.id] = result
                if not healthy and stack is not None:
                    await stack.aclose()  # a fresh process for the next check
                    probe = stack = None

    def plan(self) -> None:
        assert self.report.version is not None
        self.select(self.report.version)
        # Long checks first, so the workers finish together.
        self.queue = sorted(self.checks, key=lambda c: (not c.scenarios, not c.fresh))

    async def run(self) -> RunReport:
        started = time.monotonic()
        jobs = max(1, self.options.jobs)
        async with anyio.create_task_group() as tg:
            for number in range(jobs):
                tg.start_soon(self.worker, number)
        self.report.results = [self.results[c.id] for c in in_report_order(self.checks)]
        dialer = self.options.dialer
        if dialer is not None:
            every = remote_checks_for(dialer.profile)
            ids = [c.id for c in every if self.chosen.chooses(c.id, "transport", c.tier.value)]
            self.report.not_selected += [c.id for c in every if c.id not in ids]
            remote: list[RemoteResult] = []
            if ids and self.unreachable:
                assert self.report.problem is not None
                remote = remote_not_run(dialer, self.report.problem, ids)
            elif ids:
                remote = await run_remote_checks(dialer, self.options.wait, ids)
            self.report.results += [
                CheckResult(
                    r.id, r.title, (r.rule,), r.status, r.message, r.seconds, "transport", [], r.warnings, r.notes
                )
                for r in remote
            ]
        self.report.seconds = time.monotonic() - started
        return self.report


async def run(options: RunOptions) -> RunReport:
    """Run the checks ``options`` selects against the agent and return the report."""
    root = tempfile.mkdtemp(prefix="acp-conformance-")
    try:
        return await _Run(options, os.path.realpath(root)).run()
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def run_checks(
    argv: Sequence[str], *, only: Sequence[str] = (), jobs: int = 4, timeout: float | None = None
) -> list[CheckResult]:
    """The results alone (for tests and scripts): ``run`` with default options."""
    options = RunOptions(argv, only=only, jobs=jobs, wait=timeout if timeout is not None else 10.0)
    return (await run(options)).results
