"""Check real ACP agents through acp-session's public API; write a table of agent x check.

    python -m dev.real_agents.check [--agent NAME ...] [--out docs/real-agents.md] [--cache DIR] [--json PATH]

Each agent runs with a fresh temporary HOME, in a temporary working directory, and with an environment
holding no credentials (only PATH, HOME, LANG, TERM, USER and TMPDIR), unless some of the agent's credential
variables (``agents.toml``) are set in the caller's environment: then exactly those are passed on, and one
real prompt is run. Checks, each ``pass``, ``fail`` (with a short reason) or ``n/a``:

initialize (and its time), protocol (the negotiated version), auth methods (decoded, with their ids and
kinds), session/new (a session, or the typed login error), session/list (a listing, or a typed "not
supported"), close (the session's close where supported, then leaving the connection), no process left
(every process started for the agent is gone after leaving ``spawn``), prompt (with credentials only).

Every step has a time limit; an agent failing never stops the others; whatever the agent left running is
killed at the end.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from contextlib import aclosing, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path

import anyio

import acp_session
from acp_session import AuthenticationRequired, CapabilityNotSupported, ClientBuilder, ClientConnection, Conversation
from acp_session.errors import AuthRequired
from acp_session.transport import AgentProcess, stdio_agent

from .procs import ProcessTracker
from .table import DEFAULT_CACHE, REGISTRY, REPO, AgentSpec, TableError, load_agents

__all__ = ["CHECKS", "PROMPT", "AgentReport", "Cell", "Limits", "Target", "check_agent", "render_markdown"]

CHECKS = (
    "initialize",
    "protocol",
    "auth methods",
    "session/new",
    "session/list",
    "close",
    "no process left",
    "prompt",
)
PROMPT = "Reply with the single word: pong"
_BASE_ENV = ("PATH", "LANG", "TERM", "USER", "TMPDIR")
_SLOW_INITIALIZE = 2.0


@dataclass
class Cell:
    status: str  # "pass", "fail" or "n/a"
    text: str = ""

    def render(self) -> str:
        text = " ".join(self.text.split())
        return f"{self.status}: {text}" if text else self.status


@dataclass(frozen=True)
class Limits:
    """Seconds allowed for each step."""

    initialize: float = 60.0
    request: float = 30.0
    prompt: float = 120.0
    close: float = 15.0
    exit_wait: float = 5.0
    poll_interval: float = 0.2

    @property
    def total(self) -> float:
        """A last-resort bound on one agent's whole check."""
        return self.initialize + 4 * self.request + self.prompt + 2 * self.close + self.exit_wait + 60


@dataclass(frozen=True)
class Target:
    """One agent to check: how to start it and what it needs."""

    name: str
    argv: Sequence[str]
    version: str = ""
    package: str = ""
    credentials: Sequence[str] = ()
    login: Mapping[str, str] = field(default_factory=dict)
    prompt: str = "credentials"  # "credentials", "always" or "never"
    note: str = ""
    origin: str = ""  # how the command was found (the registry id, or the table's own command)
    reap: bool = True  # run the agent under the library's reaper (the default of spawn); False: its process group

    @classmethod
    def from_spec(cls, spec: AgentSpec, cache: Path) -> Target:
        return cls(
            name=spec.name,
            argv=spec.argv(cache),
            version=spec.version,
            package=spec.package,
            credentials=spec.credentials,
            login=spec.login,
            prompt=spec.prompt,
            note=spec.note,
            origin=origin_of(spec),
        )


def origin_of(spec: AgentSpec) -> str:
    """Where the command comes from, for the report: the registry id it was resolved through, or none."""
    if spec.registry is None:
        return "not in the registry: the table's own command"
    text = f"registry id `{spec.registry}`, pinned to {spec.version}"
    if spec.package != spec.registry_package:
        text += f" under the table's package name (the entry names `{spec.registry_package}`)"
    return text


@dataclass
class AgentReport:
    name: str
    package: str
    version: str
    argv: list[str]
    origin: str = ""
    cells: dict[str, Cell] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    credentials_passed: list[str] = field(default_factory=list)
    stderr_tail: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def cell(self, name: str) -> Cell:
        return self.cells.get(name, Cell("n/a", "not reached"))

    def set(self, name: str, status: str, text: str = "") -> None:
        self.cells[name] = Cell(status, text)

    def fill(self, status: str, text: str) -> None:
        """Give every check not done yet this cell."""
        for name in CHECKS:
            self.cells.setdefault(name, Cell(status, text))

    @property
    def failed(self) -> list[str]:
        return [name for name in CHECKS if self.cell(name).status == "fail"]


# -- helpers ---------------------------------------------------------------------------------------------------


def _short(exc: BaseException, limit: int = 240) -> str:
    text = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe_methods(client: ClientConnection) -> list[str]:
    """Each advertised auth method as ``id (kind, detail)``, from ``ClientConnection.auth.login_methods``."""
    out: list[str] = []
    for method in client.auth.login_methods:
        detail = [method.kind]
        if method.env_vars:
            detail.append("vars " + " ".join(method.env_vars))
        command = method.login_command
        if command:
            detail.append("terminal-auth `" + " ".join([os.path.basename(command[0]), *command[1:]]) + "`")
        elif method.terminal_args is not None:
            detail.append("args `" + " ".join(method.terminal_args) + "`")
        out.append(f"{method.method_id} ({', '.join(detail)})")
    return out


def _environment(environ: Mapping[str, str], home: Path, passed: Sequence[str]) -> dict[str, str]:
    env = {name: environ[name] for name in _BASE_ENV if environ.get(name)}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env["TERM"] = "dumb"
    env["HOME"] = str(home)
    for name in passed:
        env[name] = environ[name]
    return env


def _size(path: Path) -> int:
    total = 0
    for root, dirs, files in os.walk(path, onerror=lambda _: None):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            with suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def _home_note(home: Path) -> str | None:
    """What the agent wrote into its fresh HOME, when it is more than a few files (first-start downloads)."""
    total = _size(home)
    if total < 1 << 20:
        return None
    parts: list[tuple[int, str]] = []
    for top in home.iterdir():
        if top.is_dir() and not top.is_symlink():
            for sub in top.iterdir():
                parts.append((_size(sub) if sub.is_dir() else sub.lstat().st_size, f"{top.name}/{sub.name}"))
        else:
            parts.append((top.lstat().st_size, top.name))
    parts.sort(reverse=True)
    big = ", ".join(f"~/{name} {size / 1e6:.0f} MB" for size, name in parts[:3] if size >= 1 << 20)
    return f"wrote {total / 1e6:.0f} MB into its fresh HOME ({big})"


# -- the check -------------------------------------------------------------------------------------------------


async def _poll(tracker: ProcessTracker, interval: float) -> None:
    while True:
        tracker.poll()
        await anyio.sleep(interval)


class _Run:
    """What one connection produced, kept for the checks made after leaving it."""

    def __init__(self) -> None:
        self.entered = False
        self.transport: AgentProcess | None = None
        self.conversation: Conversation | None = None
        self.session_close: Cell | None = None
        self.leave_started: float | None = None
        self.left: float | None = None


async def check_agent(
    target: Target, *, environ: Mapping[str, str] | None = None, limits: Limits | None = None
) -> AgentReport:
    """Run every check against ``target``; never raises for the agent's failures, never leaves it running."""
    environ = os.environ if environ is None else environ
    limits = limits or Limits()
    report = AgentReport(target.name, target.package, target.version, list(target.argv), target.origin)
    if target.note:
        report.notes.append(target.note)
    passed = [name for name in target.credentials if environ.get(name)]
    report.credentials_passed = passed
    home = Path(tempfile.mkdtemp(prefix=f"acp-real-{target.name}-home-"))
    cwd = Path(tempfile.mkdtemp(prefix=f"acp-real-{target.name}-cwd-"))
    tracker = ProcessTracker()
    run = _Run()
    started = time.monotonic()
    try:
        with anyio.move_on_after(limits.total) as overall:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_poll, tracker, limits.poll_interval)
                try:
                    env = _environment(environ, home, passed)
                    await _connection(target, env, cwd, passed, report, run, tracker, limits)
                finally:
                    tg.cancel_scope.cancel()
            _close_cell(report, run)
            await _exit_check(report, tracker, limits)
        if overall.cancelled_caught:
            report.fill("fail", f"the check did not finish within {limits.total:.0f} s")
    except Exception as exc:  # a fault of the checker itself: report it, go on with the other agents
        report.fill("fail", f"checker error: {_short(exc)}")
    finally:
        killed = tracker.kill_all()
        _process_notes(report, tracker, run)
        if killed:
            report.notes.append("the checker killed what was left: " + ", ".join(map(tracker.describe, killed)))
        try:
            note = _home_note(home)
        except OSError:
            note = None
        if note:
            report.notes.append(note)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(cwd, ignore_errors=True)
        report.seconds = time.monotonic() - started
    report.fill("n/a", "not reached")
    return report


async def _connection(
    target: Target,
    env: dict[str, str],
    cwd: Path,
    passed: Sequence[str],
    report: AgentReport,
    run: _Run,
    tracker: ProcessTracker,
    limits: Limits,
) -> None:
    builder = ClientBuilder("acp-session-real-agents", acp_session.__version__).on_request_permission(lambda _: None)
    init_scope = anyio.CancelScope(deadline=anyio.current_time() + limits.initialize)
    t0 = time.monotonic()
    try:
        with init_scope:
            # What builder.spawn does, in its two public steps: the process first, so that its stderr tail and
            # exit code are there to read whatever happens.
            async with stdio_agent(list(target.argv), str(cwd), env, reap_descendants=target.reap) as agent:
                run.transport = agent
                async with builder.connect(agent) as client:
                    init_scope.deadline = math.inf  # initialize is done; the steps have their own limits
                    run.entered = True
                    # Only now: a process seen before its exec has the checker's process group, not its own.
                    tracker.add_root(agent.pid)
                    took = time.monotonic() - t0
                    report.set("initialize", "pass", f"{took:.2f} s")
                    if took > _SLOW_INITIALIZE:
                        report.notes.append(f"slow to start: initialize answered after {took:.1f} s")
                    _protocol(client, report)
                    _auth_methods(client, report)
                    await _new_session(client, target, cwd, passed, report, run, limits)
                    await _list(client, report, run, limits)
                    await _prompt(target, passed, report, run, limits)
                    await _close_session(client, run, limits)
                    run.leave_started = time.monotonic()
            run.left = time.monotonic()
    except Exception as exc:
        if not run.entered:
            report.set("initialize", "fail", _short(exc))
        elif run.leave_started is not None:
            run.left = time.monotonic()
            report.set("close", "fail", f"leaving the connection raised {_short(exc)}")
        else:
            raise
    finally:
        if run.transport is not None and run.transport.stderr_tail:
            report.stderr_tail = list(run.transport.stderr_tail)
    if init_scope.cancelled_caught and not run.entered:
        report.set("initialize", "fail", f"no answer within {limits.initialize:.0f} s (the checker's limit)")
    if not run.entered:
        for name in ("protocol", "auth methods", "session/new", "session/list", "close", "prompt"):
            report.cells.setdefault(name, Cell("n/a", "initialize failed"))


def _protocol(client: ClientConnection, report: AgentReport) -> None:
    try:
        version = client.protocol.version
        info = client.agent.info
        who = f" ({info.name} {info.version})" if info.name != "unknown" else " (no agentInfo)"
        status = "pass" if version in (1, 2) else "fail"
        report.set("protocol", status, f"v{version}{who}")
    except Exception as exc:
        report.set("protocol", "fail", _short(exc))


def _auth_methods(client: ClientConnection, report: AgentReport) -> None:
    try:
        described = _describe_methods(client)
        sent = len(client.auth.methods)  # every method received, an unknown shape kept as received
    except Exception as exc:
        report.set("auth methods", "fail", _short(exc))
        return
    if len(described) < sent:
        report.set("auth methods", "fail", f"decoded {len(described)} of the {sent} sent: " + "; ".join(described))
    elif not described:
        report.set("auth methods", "pass", "none advertised")
    else:
        report.set("auth methods", "pass", f"{len(described)}: " + "; ".join(described))


def _auth_cell(exc: AuthRequired, advertised: Sequence[str], what: str) -> Cell:
    """A refusal for lack of login: it must come as ``AuthenticationRequired`` naming the advertised methods."""
    said = "" if exc.message == "Authentication required" else f' "{exc.message}"'
    data = "" if exc.data is None else f" data={json.dumps(exc.data, default=str)[:80]}"
    if not isinstance(exc, AuthenticationRequired):
        return Cell("fail", f"{what}: a plain AuthRequired [{exc.code}]{said}, not acp_session.AuthenticationRequired")
    methods = [m.method_id for m in exc.methods]
    if sorted(methods) != sorted(advertised):
        return Cell("fail", f"{what}: AuthenticationRequired has methods {methods}, initialize gave {advertised}")
    named = ", ".join(methods) if methods else "none"
    return Cell("pass", f"{what}: AuthenticationRequired{said}{data}; methods: {named}")


async def _new_session(
    client: ClientConnection,
    target: Target,
    cwd: Path,
    passed: Sequence[str],
    report: AgentReport,
    run: _Run,
    limits: Limits,
) -> None:
    t0 = time.monotonic()
    logged_in = ""
    for attempt in range(2):
        try:
            with anyio.fail_after(limits.request):
                run.conversation = await client.start_conversation(cwd)
        except AuthRequired as exc:
            method = next((target.login[name] for name in passed if name in target.login), None)
            if attempt == 0 and method is not None:
                error = await _login(client, method, limits)
                if error is None:
                    logged_in = f"after logging in with {method}, "
                    continue
                report.set("session/new", "fail", f"login required; logging in with {method} failed: {error}")
                return
            cell = _auth_cell(exc, [m.method_id for m in client.auth.login_methods], "login required")
            if passed and cell.status == "pass":
                cell = Cell("fail", cell.text + f" (although {', '.join(passed)} was passed)")
            report.cells["session/new"] = cell
            return
        except TimeoutError:
            report.set("session/new", "fail", f"no answer within {limits.request:.0f} s")
            return
        except Exception as exc:
            report.set("session/new", "fail", _short(exc))
            return
        break
    took = time.monotonic() - t0
    report.set("session/new", "pass", f"{logged_in}session opened in {took:.2f} s")


async def _login(client: ClientConnection, method: str, limits: Limits) -> str | None:
    """Log in with ``method`` (``ClientConnection.auth.login``); None when it worked."""
    try:
        with anyio.fail_after(limits.request):
            await client.auth.login(method)
    except Exception as exc:
        return _short(exc)
    return None


async def _list(client: ClientConnection, report: AgentReport, run: _Run, limits: Limits) -> None:
    try:
        with anyio.fail_after(limits.request):
            async with aclosing(client.list_sessions()) as listing:
                ids = [info.session_id async for info in listing]
    except CapabilityNotSupported:
        report.set("session/list", "pass", "not advertised: CapabilityNotSupported, nothing sent")
    except AuthRequired as exc:
        report.set("session/list", "pass", f"login required [{exc.code}] {exc.message}")
    except TimeoutError:
        report.set("session/list", "fail", f"no answer within {limits.request:.0f} s")
    except Exception as exc:
        report.set("session/list", "fail", _short(exc))
    else:
        text = f"{len(ids)} listed"
        if run.conversation is not None:
            mine = run.conversation.session_id in ids
            text += ", including the new session" if mine else ", not the new session"
        report.set("session/list", "pass", text)


async def _prompt(target: Target, passed: Sequence[str], report: AgentReport, run: _Run, limits: Limits) -> None:
    if target.prompt == "never":
        report.set("prompt", "n/a", "not run for this agent")
        return
    if target.prompt == "credentials" and not passed:
        if target.credentials:
            report.set("prompt", "n/a", f"no credentials (set {' or '.join(target.credentials)})")
        else:
            report.set("prompt", "n/a", "no credential variable known")
        return
    conversation = run.conversation
    if conversation is None:
        report.set("prompt", "fail", "no session to prompt")
        return
    t0 = time.monotonic()
    try:
        with anyio.fail_after(limits.prompt):
            response = await conversation.chat_to_completion(PROMPT)
    except TimeoutError:
        with anyio.move_on_after(5):
            await conversation.cancel()
        report.set("prompt", "fail", f"no answer within {limits.prompt:.0f} s (cancelled)")
        return
    except AuthRequired as exc:
        cell = _auth_cell(exc, [], "login required")
        report.set("prompt", "fail", cell.text)
        return
    except Exception as exc:
        report.set("prompt", "fail", _short(exc))
        return
    took = time.monotonic() - t0
    reply = " ".join(response.text.split())
    reply = reply if len(reply) <= 40 else reply[:39] + "…"
    text = f"stop reason {response.stop_reason} in {took:.1f} s, reply {reply!r}"
    if response.error is not None:
        report.set("prompt", "fail", f"{text}, error {response.error}")
    else:
        report.set("prompt", "pass" if response.stop_reason == "end_turn" else "fail", text)


async def _close_session(client: ClientConnection, run: _Run, limits: Limits) -> None:
    if run.conversation is None:
        return
    how = "session/close" if client.agent.supports("session/close") else "closed locally (no session/close)"
    try:
        with anyio.fail_after(limits.close):
            await run.conversation.session.close()
    except TimeoutError:
        run.session_close = Cell("fail", f"{how}: no answer within {limits.close:.0f} s")
    except Exception as exc:
        run.session_close = Cell("fail", f"{how}: {_short(exc)}")
    else:
        run.session_close = Cell("pass", how)


def _close_cell(report: AgentReport, run: _Run) -> None:
    if not run.entered or "close" in report.cells:
        return
    parts = [run.session_close.text if run.session_close is not None else "no session"]
    if run.left is not None and run.leave_started is not None:
        parts.append(f"left in {run.left - run.leave_started:.2f} s")
    code = run.transport.returncode if run.transport is not None else None
    if code is not None:
        parts.append(f"exit code {code}" if code >= 0 else f"ended by signal {-code}")
    status = "fail" if run.session_close is not None and run.session_close.status == "fail" else "pass"
    report.set("close", status, ", ".join(parts))


async def _exit_check(report: AgentReport, tracker: ProcessTracker, limits: Limits) -> None:
    deadline = time.monotonic() + limits.exit_wait
    t0 = time.monotonic()
    while True:
        alive = tracker.poll()
        if not alive or time.monotonic() >= deadline:
            break
        await anyio.sleep(0.1)
    if not tracker.known:
        report.set("no process left", "n/a", "no process seen")
    elif alive:
        names = ", ".join(tracker.describe(p) for p in alive)
        text = f"{len(alive)} still running {limits.exit_wait:.0f} s after leaving: {names}"
        report.set("no process left", "fail", text)
    else:
        waited = time.monotonic() - t0
        after = f", {waited:.1f} s after leaving" if waited >= 0.15 else ""
        count = len(tracker.known)
        report.set("no process left", "pass", f"{count} process{'es' if count != 1 else ''} started, all gone{after}")


def _process_notes(report: AgentReport, tracker: ProcessTracker, run: _Run) -> None:
    code = run.transport.returncode if run.transport is not None else None
    if code is not None and code < 0 and run.left is not None and run.leave_started is not None:
        report.notes.append(
            f"did not exit when its stdin closed: ended by signal {-code} after {run.left - run.leave_started:.1f} s"
        )
    if tracker.known:
        group = "its own process group" if tracker.own_group else "the checker's process group"
        report.notes.append(f"processes: {tracker.tree()} (in {group})")


# -- the report ------------------------------------------------------------------------------------------------


def _cmd(args: Sequence[str]) -> str:
    try:
        proc = subprocess.run(list(args), capture_output=True, text=True, timeout=10, cwd=REPO)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def environment_line() -> str:
    commit = _cmd(["git", "rev-parse", "--short", "HEAD"])
    dirty = _cmd(["git", "status", "--porcelain", "--", "acp_session"])
    lib = f"acp-session {acp_session.__version__}"
    if commit:
        lib += f" at commit {commit}" + (" with uncommitted changes in acp_session/" if dirty else "")
    node = _cmd(["node", "--version"]) or "node not found"
    return f"{lib}; Python {platform.python_version()}; node {node}; {platform.system()} {platform.machine()}"


def _esc(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(reports: Sequence[AgentReport], *, command: str, when: str, environment: str) -> str:
    lines = [
        "# Real agents",
        "",
        "The agents people run, checked through acp-session's public API (`ClientBuilder().spawn(...)`), each with a",
        "fresh empty HOME, in an empty temporary working directory and with no credentials in its environment (only",
        "PATH, HOME, LANG, TERM, USER, TMPDIR). A credential variable listed in `dev/real_agents/agents.toml` that is",
        "set in the caller's environment is passed on, and then one real prompt runs. Each agent's command is",
        "resolved through its ACP registry id (`acp_session.registry.pinned_command`, the bundled snapshot) at the",
        "pinned version, and runs from the harness's install folder (no npx at run time). Generated by",
        "`python -m dev.real_agents.check`; not part of CI (the agents download hundreds of MB on first start).",
        "",
        f"- Date: {when}",
        f"- Rerun: `{command}`",
        f"- Environment: {environment}",
        "",
        "| agent | version | " + " | ".join(CHECKS) + " |",
        "|---|---|" + "---|" * len(CHECKS),
    ]
    for report in reports:
        cells = [_esc(report.cell(name).render()) for name in CHECKS]
        lines.append(f"| {report.name} | {report.package} {report.version} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Checks: **initialize** (time to the answer), **protocol** (the negotiated version), **auth methods**",
        "(decoded, never fewer than were sent; id and kind of each), **session/new** (a session, or the typed login",
        "error with the agent's methods), **session/list** (a listing, or `CapabilityNotSupported` when not",
        "advertised), **close** (the session's close where supported, then leaving `spawn`), **no process left**",
        "(every process started for the agent, found through /proc, is gone within a few seconds of leaving; zombies",
        'do not count), **prompt** (`chat_to_completion("Reply with the single word: pong")`, time limit',
        "120 s; only with credentials, or for an agent that needs none).",
        "",
        "## Notes",
        "",
    ]
    for report in reports:
        lines.append(f"### {report.name}")
        lines.append("")
        if report.origin:
            lines.append(f"- started by: {report.origin}")
        lines.append(f"- command: `{' '.join(_display_argv(report.argv))}`")
        if report.credentials_passed:
            lines.append(f"- credentials passed: {', '.join(report.credentials_passed)}")
        lines.extend(f"- {note}" for note in report.notes)
        if report.failed and report.stderr_tail:
            tail = " \\| ".join(line.strip() for line in report.stderr_tail[-3:] if line.strip())
            lines.append(f"- last stderr lines: {_esc(tail)}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


OWN_SECTIONS = ("## Notes",)
"""The ``## `` sections ``render_markdown`` writes (after the table); any other section of the file is kept."""


def keep_other_sections(generated: str, old: str) -> str:
    """``generated`` followed by the ``## `` sections of ``old`` that it does not write itself: the whole-turns
    section (``turns.py`` replaces it) and hand-written ones survive a rerun, in their order."""
    kept: list[str] = []
    parts = ("\n" + old).split("\n## ")[1:]
    for part in parts:
        section = "## " + part
        if section.splitlines()[0].strip() not in OWN_SECTIONS:
            kept.append(section.rstrip() + "\n")
    return "\n".join([generated.rstrip() + "\n", *kept])


def _display_argv(argv: Sequence[str]) -> list[str]:
    """The command line with the repository's path cut off (it differs between machines)."""
    root = str(REPO) + os.sep
    out = [arg[len(root) :] if arg.startswith(root) else arg for arg in argv]
    if out and os.path.isabs(out[0]):
        out[0] = os.path.basename(out[0])  # node, python: found on PATH
    return out


# -- command line ----------------------------------------------------------------------------------------------


def _not_installed(spec: AgentSpec, cache: Path) -> AgentReport:
    found = spec.installed_version(cache)
    report = AgentReport(spec.name, spec.package, spec.version, spec.argv(cache), origin_of(spec))
    why = f"{spec.version} not installed (found {found})" if found else "not installed"
    report.set("initialize", "fail", f"{why}: run python -m dev.real_agents.install")
    report.fill("n/a", "not installed")
    return report


async def _check_all(targets: Sequence[Target | AgentReport], limits: Limits) -> list[AgentReport]:
    reports: list[AgentReport] = []
    for target in targets:
        if isinstance(target, AgentReport):
            reports.append(target)
            continue
        print(f"{target.name}: checking ({' '.join(_display_argv(target.argv))})", file=sys.stderr, flush=True)
        report = await check_agent(target, limits=limits)
        for name in CHECKS:
            print(f"  {name}: {report.cell(name).render()}", file=sys.stderr)
        print(f"  ({report.seconds:.1f} s)", file=sys.stderr, flush=True)
        reports.append(report)
    return reports


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dev.real_agents.check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", action="append", default=[], metavar="NAME", help="only this agent (repeatable)")
    parser.add_argument("--out", type=Path, help="write the markdown report here (else print it)")
    parser.add_argument("--json", type=Path, help="also write the raw results as JSON here")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="install folder (default %(default)s)")
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--registry", default=REGISTRY, help="where registry ids are looked up (default %(default)s)")
    parser.add_argument("--initialize-timeout", type=float, default=Limits.initialize, metavar="S")
    parser.add_argument("--prompt-timeout", type=float, default=Limits.prompt, metavar="S")
    args = parser.parse_args(argv)
    try:
        table = load_agents(registry=args.registry)
    except (OSError, TableError) as exc:
        print(f"dev.real_agents.check: {exc}", file=sys.stderr)
        return 2
    unknown = [name for name in args.agent if name not in table]
    if unknown:
        parser.error(f"unknown agent(s) {unknown}; known: {', '.join(table)}")
    specs = [table[name] for name in args.agent] if args.agent else list(table.values())
    targets: list[Target | AgentReport] = [
        Target.from_spec(spec, args.cache)
        if spec.installed_version(args.cache) == spec.version
        else _not_installed(spec, args.cache)
        for spec in specs
    ]
    limits = Limits(initialize=args.initialize_timeout, prompt=args.prompt_timeout)
    reports = anyio.run(_check_all, targets, limits, backend=args.backend)
    command = "make real-agents"
    if args.agent or args.out is None:
        parts = ["python -m dev.real_agents.check", *(f"--agent {name}" for name in args.agent)]
        if args.out is not None:
            parts.append(f"--out {args.out}")
        command = " ".join(parts)
    when = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    text = render_markdown(reports, command=command, when=when, environment=environment_line())
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        args.out.write_text(keep_other_sections(text, old), encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in reports], indent=2) + "\n", encoding="utf-8")
    return 1 if any(report.failed for report in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
