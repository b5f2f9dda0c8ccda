"""Whole turns against a scripted local model, through acp-session's public API.

    python -m dev.real_agents.turns [--agent NAME ...] [--out docs/real-agents.md] [--cache DIR] [--no-isolate]

For every agent of ``agents.toml`` with a ``model`` wiring: start the scripted model (``model_server``) on
127.0.0.1, point the agent at it (``wiring``) with a fresh HOME and a fake key, and run, in one session:
a text reply; an edit approved and one rejected (the permission answered, the file written or not, the
``ChatFile`` events); a shell command; a long reply cancelled; a second turn; then, for a v2 agent, per-turn
usage in ``ChatResponse.usage``, fork / title / system prompt where advertised, and every ``session/update``
the application received compared field by field with the raw JSON of the recorded wire. Last, a new agent
process resumes the session (same HOME) and runs one more turn.

With ``--out``, the results replace the "Whole turns" section of that file (``check`` writes the rest). On
Linux the run re-executes itself in a new network namespace (``unshare -rn``) where only the loopback
interface exists, so the agents reach 127.0.0.1 and nothing else; ``--no-isolate`` skips that.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

import acp_session
from acp_session import CapabilityNotSupported, ClientBuilder, ClientConnection, Conversation
from acp_session.codec import to_builtins
from acp_session.conversation import ChatDone, ChatError, ChatText
from acp_session.errors import AuthRequired
from acp_session.schema import Diff
from acp_session.transcript import read_transcript

from .check import Cell, Target, _environment, _poll, _short, environment_line
from .model_server import ModelServer
from .procs import ProcessTracker
from .script import marker
from .table import DEFAULT_CACHE, REGISTRY, TableError, load_agents
from .wire import updates_of, wire_diff
from .wiring import ASKING_MODE, HOW, wire

__all__ = ["TURN_CHECKS", "V2_CHECKS", "TurnReport", "advertised", "render_section", "run_turns"]

TURN_CHECKS = ("text", "edit approved", "edit rejected", "shell", "cancel", "second turn", "resume")
V2_CHECKS = ("usage", "wire", "fork", "title", "system prompt")
SECTION = "## Whole turns against a scripted model"
SHELL_OUTPUT = "scripted-shell-ok"
SYSTEM_MARK = "SCRIPTED-SYSTEM-PROMPT-7f3a"
_ISOLATED = "ACP_REAL_AGENTS_ISOLATED"


@dataclass
class TurnReport:
    name: str
    package: str
    version: str
    model: str
    protocol: int | None = None
    cells: dict[str, Cell] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def cell(self, name: str) -> Cell:
        return self.cells.get(name, Cell("n/a", "not reached"))

    def set(self, name: str, status: str, text: str = "") -> None:
        self.cells[name] = Cell(status, text)

    @property
    def checks(self) -> tuple[str, ...]:
        return TURN_CHECKS + (V2_CHECKS if self.protocol == 2 else ())

    @property
    def failed(self) -> list[str]:
        return [name for name in self.checks if self.cell(name).status == "fail"]


class Permissions:
    """Answers permission requests by the current ``answer`` ("allow" or "reject"); keeps what was asked."""

    def __init__(self) -> None:
        self.answer = "allow"
        self.asked: list[str] = []

    def __call__(self, request: Any) -> str | None:
        kinds = ("allow_once", "allow_always") if self.answer == "allow" else ("reject_once", "reject_always")
        for kind in kinds:
            for option in request.options:
                if option.kind == kind:
                    self.asked.append(f"{kind} {option.option_id!r}")
                    return str(option.option_id)
        self.asked.append("cancelled (no such option)")
        return None

    def take(self) -> list[str]:
        asked, self.asked = self.asked, []
        return asked


@dataclass
class _Run:
    """What the checks share across the two processes."""

    target: Target
    env: dict[str, str]
    cwd: Path
    transcript: Path
    model: ModelServer
    limits_turn: float
    permissions: Permissions = field(default_factory=Permissions)
    notes_seen: list[Any] = field(default_factory=list)
    session_id: str | None = None


def _builder(run: _Run, transcript: Path | None) -> ClientBuilder:
    builder = ClientBuilder("acp-session-real-agents", acp_session.__version__).on_request_permission(run.permissions)
    builder = builder.on_session_update(run.notes_seen.append)
    return builder.record_transcript(transcript) if transcript is not None else builder


async def _open(client: ClientConnection, run: _Run) -> Conversation:
    """A new conversation, logging in with the fake key's method when the agent asks for a login."""
    try:
        return await client.start_conversation(run.cwd)
    except AuthRequired:
        methods = list(dict.fromkeys(run.target.login.values()))
        if not methods:
            raise
        await client.auth.login(methods[0])
        return await client.start_conversation(run.cwd)


def _prompt(scenario: str, **params: str) -> str:
    return f"Follow the script. {marker(scenario, **params)}"


def _files(response: Any) -> str:
    paths = [os.path.basename(p) for p in response.file_paths]
    return f"ChatFile {', '.join(paths)}" if paths else "no ChatFile"


def _tools(response: Any) -> str:
    return (
        ", ".join(f"{call.title or call.name or '?'} {call.status}" for call in response.tool_calls) or "no tool call"
    )


async def _turn(conversation: Conversation, text: str, limit: float) -> Any:
    return await conversation.chat_to_completion(text, timeout=limit)


async def _check(report: TurnReport, name: str, fn: Callable[[], Any], limit: float) -> None:
    """Run one check, its failures (an exception, the time limit) becoming its cell."""
    try:
        with anyio.fail_after(limit + 10):
            await fn()
    except TimeoutError:
        report.set(name, "fail", f"no end within {limit:.0f} s")
    except Exception as exc:
        report.set(name, "fail", _short(_single(exc)))


async def _first_process(run: _Run, report: TurnReport, limit: float) -> None:
    async with _builder(run, run.transcript).spawn(list(run.target.argv), env=run.env, cwd=str(run.cwd)) as client:
        report.protocol = client.protocol.version
        conversation = await _open(client, run)
        run.session_id = conversation.session_id
        await _asking_mode(conversation, report)
        usage: list[Any] = []

        async def text() -> None:
            response = await _turn(conversation, _prompt("text"), limit)
            usage.append(response.usage)
            ok = "pong" in response.text and response.stop_reason == "end_turn"
            report.set("text", "pass" if ok else "fail", f"{response.stop_reason}, reply {response.text[:40]!r}")

        async def edit(name: str, answer: str) -> None:
            path = run.cwd / f"{answer}.txt"
            run.permissions.answer = answer
            response = await _turn(conversation, _prompt("edit", path=str(path), content="scripted_edit"), limit)
            asked = run.permissions.take()
            written = path.exists()
            wanted = answer == "allow"
            answered = f"answered {', '.join(asked)}" if asked else "no permission request"
            parts = [answered, "file written" if written else "file not written"]
            parts += [_tools(response), _files(response), f"stop reason {response.stop_reason}"]
            # A rejection may end the turn (codex ends it cancelled); an approval must not.
            ended = response.stop_reason == "end_turn" or (not wanted and response.stop_reason == "cancelled")
            ok = written == wanted and bool(asked) and ended
            if wanted and written:
                # A ChatFile comes from the diff of a completed tool call: required when the agent sent one.
                diffs = [c for call in response.tool_calls for c in call.content if isinstance(c, Diff)]
                ok = ok and path.read_text() == "scripted edit\n"
                if diffs:
                    ok = ok and str(path) in response.file_paths
                else:
                    parts[3] += " (the agent's tool call carries no diff)"
            report.set(name, "pass" if ok else "fail", "; ".join(parts))

        async def shell() -> None:
            run.permissions.answer = "allow"
            response = await _turn(conversation, _prompt("shell", command=f"echo_{SHELL_OUTPUT}"), limit)
            asked = run.permissions.take()
            seen = SHELL_OUTPUT in response.text or any(
                SHELL_OUTPUT in str(call.raw_output) for call in response.tool_calls
            )
            answered = f"answered {', '.join(asked)}" if asked else "no permission request"
            text = f"{answered}; {_tools(response)}; output {'seen' if seen else 'not seen'}"
            if not seen:
                results = [r.result for r in run.model.requests if r.scenario == "shell" and r.result]
                if results:
                    said = " ".join(results[-1].split("Output:", 1)[-1].split())
                    text += f"; the tool result the model got: {said[:200]!r}"
            ok = seen and response.stop_reason == "end_turn"
            report.set("shell", "pass" if ok else "fail", f"{text}; {response.stop_reason}")

        async def cancel() -> None:
            t0 = time.monotonic()
            end: Any = None
            sent = None
            async for event in conversation.chat(_prompt("long")):
                if isinstance(event, ChatText) and sent is None:
                    sent = time.monotonic()
                    await conversation.cancel()
                if isinstance(event, (ChatDone, ChatError)):
                    end = event.response
            hung_up = False
            with anyio.move_on_after(2):  # the server notices a closed stream at its next write
                while not hung_up:
                    hung_up = any(r.hung_up for r in run.model.requests if r.scenario == "long")
                    await anyio.sleep(0.05)
            if end is None or sent is None:
                report.set("cancel", "fail", "no reply text before the turn ended")
                return
            took = time.monotonic() - sent
            stream = "closed" if hung_up else "not closed"
            text = f"stop reason {end.stop_reason} {took:.1f} s after cancel(); model stream {stream} by the agent"
            report.set("cancel", "pass" if end.stop_reason == "cancelled" else "fail", text)
            del t0

        async def second() -> None:
            response = await _turn(conversation, _prompt("second"), limit)
            ok = "second turn" in response.text and response.stop_reason == "end_turn"
            reply = f"reply {response.text[:30]!r}" if response.text else "no reply"
            text = f"stop reason {response.stop_reason}, {reply}, turns seen {conversation.turn_count}"
            report.set("second turn", "pass" if ok else "fail", text)

        await _check(report, "text", text, limit)
        await _check(report, "edit approved", lambda: edit("edit approved", "allow"), limit)
        await _check(report, "edit rejected", lambda: edit("edit rejected", "reject"), limit)
        await _check(report, "shell", shell, limit)
        await _check(report, "cancel", cancel, limit)
        await _check(report, "second turn", second, limit)
        if client.protocol.version == 2:
            _usage_cell(report, usage)
            await _check(report, "fork", lambda: _fork(client, conversation, run, report), limit)
            await _check(report, "title", lambda: _title(client, conversation, run, report), limit)
            await _check(report, "system prompt", lambda: _system_prompt(client, run, report, limit), limit)
        with anyio.move_on_after(15):
            await conversation.session.close()


async def _asking_mode(conversation: Conversation, report: TurnReport) -> None:
    """Switch to the mode that asks before edits (``set_mode``), noting the mode the agent started in."""
    wanted = ASKING_MODE.get(report.model)
    options = conversation.state.config_options
    option = next((o for o in options if getattr(o, "category", None) == "mode"), None)
    if not wanted or option is None:
        report.notes.append("no mode option: the agent's permission questions as they come")
        return
    current = getattr(option, "current_value", None)
    if current == wanted:
        report.notes.append(f"started in mode {current!r}, which asks before edits")
        return
    await conversation.session.set_mode(wanted, conversation.state.config_options)
    report.notes.append(f"started in mode {current!r}; set_mode({wanted!r}) so that edits are asked for")


def _usage_cell(report: TurnReport, usage: list[Any]) -> None:
    found = usage[0] if usage else None
    if found is None:
        report.set("usage", "fail", "ChatResponse.usage is None for the text turn")
    else:
        numbers = {k: v for k, v in to_builtins(found).items() if isinstance(v, int)}
        report.set("usage", "pass", "ChatResponse.usage " + ", ".join(f"{k} {v}" for k, v in numbers.items()))


def advertised(path: Path) -> dict[str, bool]:
    """What the agent's raw ``initialize`` answer (in the transcript) offers: fork, title, system prompt."""
    for entry in read_transcript(path):
        result = entry.message.get("result") if isinstance(entry.message, dict) else None
        if entry.direction == "in" and isinstance(result, dict) and "protocolVersion" in result:
            caps = result.get("capabilities") or result.get("agentCapabilities") or {}
            session = caps.get("session") or caps.get("sessionCapabilities") or {}
            return {name: session.get(key) is not None for name, key in _PREVIEW.items()}
    return dict.fromkeys(_PREVIEW, False)


_PREVIEW = {"session/fork": "fork", "session/set_title": "title", "systemPrompt": "systemPrompt"}


def _supports_cell(client: ClientConnection, method: str, offered: bool) -> str | None:
    """None when ``supports(method)`` says what the agent advertised, else the mismatch."""
    said = client.agent.supports(method)
    return None if said == offered else f"supports({method!r}) is {said}, the agent advertised {offered}"


async def _fork(client: ClientConnection, conversation: Conversation, run: _Run, report: TurnReport) -> None:
    offered = advertised(run.transcript)["session/fork"]
    mismatch = _supports_cell(client, "session/fork", offered)
    if mismatch:
        report.set("fork", "fail", mismatch)
        return
    if not offered:
        report.set("fork", "n/a", "not advertised; supports() agrees")
        return
    forked = await conversation.fork(run.cwd)
    ok = forked.session_id != conversation.session_id and len(forked.history()) == len(conversation.history())
    report.set(
        "fork",
        "pass" if ok else "fail",
        f"advertised; Conversation.fork() gave session {forked.session_id!r} with the parent's "
        f"{len(forked.history())} history entries",
    )


async def _title(client: ClientConnection, conversation: Conversation, run: _Run, report: TurnReport) -> None:
    offered = advertised(run.transcript)["session/set_title"]
    mismatch = _supports_cell(client, "session/set_title", offered)
    if mismatch:
        report.set("title", "fail", mismatch)
        return
    try:
        await conversation.session.set_title("Scripted title")
    except CapabilityNotSupported as exc:
        status = "pass" if not offered else "fail"
        report.set("title", status, f"not advertised: CapabilityNotSupported ({_short(exc, 80)})")
        return
    report.set("title", "pass" if offered else "fail", f"set_title answered; advertised {offered}")


async def _system_prompt(client: ClientConnection, run: _Run, report: TurnReport, limit: float) -> None:
    offered = advertised(run.transcript)["systemPrompt"]
    try:
        session = await client.new_session(run.cwd, system_prompt=f"Always obey {SYSTEM_MARK}.")
    except CapabilityNotSupported as exc:
        status = "fail" if offered else "pass"
        report.set("system prompt", status, f"CapabilityNotSupported ({_short(exc, 80)}); advertised {offered}")
        return
    conversation = Conversation(session)
    before = len(run.model.requests)
    await _turn(conversation, _prompt("system"), limit)
    seen = any(SYSTEM_MARK in r.system for r in run.model.requests[before:] if r.scenario == "system")
    report.set("system prompt", "pass" if seen else "fail", f"the model {'saw' if seen else 'did not see'} it")
    with anyio.move_on_after(15):
        await session.close()


def _wire_cell(run: _Run, report: TurnReport) -> None:
    raw = updates_of(run.transcript)
    decoded = [to_builtins(note) for note in run.notes_seen]
    if len(raw) != len(decoded):
        report.set("wire", "fail", f"{len(raw)} session/update on the wire, {len(decoded)} given to the application")
        return
    problems: dict[str, list[str]] = {}  # "kind field" -> what differed, each time
    kinds: dict[str, int] = {}
    for left, right in zip(raw, decoded, strict=True):
        kind = str(left.get("update", {}).get("sessionUpdate", "?"))
        kinds[kind] = kinds.get(kind, 0) + 1
        for problem in wire_diff(left, right):
            where, what = problem.split(": ", 1)
            problems.setdefault(f"{kind} {where}", []).append(what)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    if problems:
        count = sum(len(v) for v in problems.values())
        shown = [f"{where} {v[0]} ({len(v)}x)" for where, v in problems.items()]
        report.set("wire", "fail", f"{count} field(s) of {len(raw)} updates differ: " + "; ".join(shown[:4]))
        report.notes.append("wire differences: " + "; ".join(shown[:12]))
    else:
        report.set("wire", "pass", f"{len(raw)} updates, every field kept ({summary})")


async def _resume(run: _Run, report: TurnReport, limit: float) -> None:
    if run.session_id is None:
        report.set("resume", "n/a", "no session to resume")
        return
    run.notes_seen = []
    async with _builder(run, None).spawn(list(run.target.argv), env=run.env, cwd=str(run.cwd)) as client:
        try:
            conversation = await Conversation.resume(client, run.session_id, run.cwd)
        except AuthRequired:
            await client.auth.login(next(iter(run.target.login.values())))
            conversation = await Conversation.resume(client, run.session_id, run.cwd)
        replayed = len(conversation.messages())
        response = await _turn(conversation, _prompt("text"), limit)
        ok = replayed > 0 and "pong" in response.text
        text = f"new process: {replayed} messages replayed, then {response.stop_reason} {response.text[:20]!r}"
        report.set("resume", "pass" if ok else "fail", text)
        with anyio.move_on_after(15):
            await conversation.session.close()


async def run_turns(
    target: Target, model: str, *, limit: float = 90.0, environ: Mapping[str, str] | None = None
) -> TurnReport:
    """Every whole-turn check against ``target``; never raises for the agent's failures, never leaves it running."""
    environ = os.environ if environ is None else environ
    report = TurnReport(target.name, target.package, target.version, model)
    home = Path(tempfile.mkdtemp(prefix=f"acp-turns-{target.name}-home-"))
    cwd = Path(tempfile.mkdtemp(prefix=f"acp-turns-{target.name}-cwd-"))
    tracker = ProcessTracker()
    started = time.monotonic()
    warnings = _Warnings()
    logging.getLogger("acp_session").addHandler(warnings)
    with ModelServer() as server:
        env = {**_environment(environ, home, ()), **wire(model, home, server.url)}
        run = _Run(target, env, cwd, home / "transcript.jsonl", server, limit)
        try:
            with anyio.fail_after(20 * limit):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_poll, tracker, 0.2)
                    await _first_process(run, report, limit)
                    if report.protocol == 2:
                        _wire_cell(run, report)
                    await _check(report, "resume", lambda: _resume(run, report, limit), limit)
                    tg.cancel_scope.cancel()
        except Exception as exc:
            for name in report.checks:
                report.cells.setdefault(name, Cell("fail", _short(_single(exc))))
        finally:
            tracker.poll()
            left = tracker.kill_all()
            if left:
                report.notes.append("killed what was left: " + ", ".join(map(tracker.describe, left)))
            report.requests = _request_summary(server)
            logging.getLogger("acp_session").removeHandler(warnings)
            report.notes += [f"the library logged: {text}" for text in warnings.seen]
            shutil.rmtree(home, ignore_errors=True)
            shutil.rmtree(cwd, ignore_errors=True)
    report.seconds = time.monotonic() - started
    for name in report.checks:
        report.cells.setdefault(name, Cell("n/a", "not reached"))
    for cell in report.cells.values():  # the temporary folder differs between runs
        cell.text = cell.text.replace(str(cwd), "$CWD").replace(str(cwd).lstrip("/"), "$CWD")
    return report


def _single(exc: BaseException) -> BaseException:
    """The one error inside (nested) exception groups of one error each; else ``exc``."""
    inner = getattr(exc, "exceptions", None)
    while isinstance(inner, (list, tuple)) and len(inner) == 1:
        exc = inner[0]
        inner = getattr(exc, "exceptions", None)
    return exc


class _Warnings(logging.Handler):
    """The library's warnings during a run (a frame that breaks the protocol, ...), each text once."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = " ".join(record.getMessage().split())
        text = text.replace(str(DEFAULT_CACHE.parent.parent) + os.sep, "")
        if text not in self.seen:
            self.seen.append(text[:300])


def _request_summary(server: ModelServer) -> list[str]:
    counts: dict[str, int] = {}
    for request in server.requests:
        what = f"{request.api} {request.path.split('?')[0]}"
        counts[what] = counts.get(what, 0) + 1
    return [f"{what} x{n}" for what, n in counts.items()]


# -- the report ------------------------------------------------------------------------------------------------


def _esc(text: str) -> str:
    return text.replace("|", "\\|")


def render_section(reports: Sequence[TurnReport], *, command: str, when: str, environment: str, isolated: str) -> str:
    lines = [
        SECTION,
        "",
        "Each agent with a model wiring in `dev/real_agents/agents.toml` runs whole turns through the public API",
        "(`ClientBuilder().spawn`, `Conversation`) against the harness's scripted model on 127.0.0.1",
        "(`dev/real_agents/model_server.py`: OpenAI chat completions and Responses API, Anthropic messages, streamed),",
        "with a fresh HOME and a fake key. Generated by `python -m dev.real_agents.turns`.",
        "",
        f"- Date: {when}",
        f"- Rerun: `{command}`",
        f"- Environment: {environment}",
        f"- Network: {isolated}",
        "",
    ]
    for checks, title in ((TURN_CHECKS, "Every agent"), (V2_CHECKS, "v2 agents")):
        rows = [r for r in reports if checks is TURN_CHECKS or r.protocol == 2]
        if not rows:
            continue
        lines += [f"{title}:", "", "| agent | version | model API | " + " | ".join(checks) + " |"]
        lines.append("|---|---|---|" + "---|" * len(checks))
        for report in rows:
            cells = [_esc(report.cell(name).render()) for name in checks]
            head = f"| {report.name} | {report.package} {report.version} | {report.model} | "
            lines.append(head + " | ".join(cells) + " |")
        lines.append("")
    lines += [
        "Checks: **text** (a streamed reply, `end_turn`), **edit approved** / **edit rejected** (the model asks to",
        "write a file; the permission request is answered allow / reject; the file is written or not, and the",
        "approved one is a `ChatFile`), **shell** (a command the agent runs; its output reaches the model),",
        "**cancel** (`Conversation.cancel()` at the first text of a long streamed reply; the turn ends `cancelled`),",
        "**second turn**, **resume** (a new agent process, same HOME: `Conversation.resume` with replay, then one",
        "more turn). For v2 agents: **usage** (`ChatResponse.usage` of the text turn), **wire** (every",
        "`session/update` the application received, re-encoded, against the raw JSON of the recorded wire: no",
        "field dropped or changed), **fork** / **title** / **system prompt** (where the library has the API and",
        "the agent advertises it; a system prompt must reach the model).",
        "",
        "The model follows a script (`dev/real_agents/script.py`): each prompt carries a marker",
        "`[[scripted:NAME key=value]]`, and the reply to a request is step N of that scenario, N being the tool",
        "calls made since the marker; a tool step (write a file, run a command) becomes a call of whichever",
        "matching tool the agent offered (`Write`, `apply_patch`, `create`, `write_file`, `Bash`, `exec_command`,",
        "`run_shell_command`, ...). Requests without tools or without a marker (titles, routing, summaries) get a",
        "short text, or a value of the JSON schema they ask for. Before the edits, the session is switched",
        "(`set_mode`) to the mode that asks before editing where the agent starts in one that does not.",
        "",
    ]
    for report in reports:
        lines += [f"### {report.name} (whole turns)", ""]
        lines.append(f"- pointed at the model by: {HOW.get(report.model, report.model)}")
        lines.append(f"- {report.seconds:.0f} s; model requests: {', '.join(report.requests) or 'none'}")
        lines += [f"- {_esc(note)}" for note in report.notes]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def replace_section(document: str, section: str) -> str:
    """``document`` with its whole-turns section (to the end, or to the next ``## `` heading) replaced."""
    start = document.find(SECTION)
    if start < 0:
        return document.rstrip() + "\n\n" + section
    end = document.find("\n## ", start + len(SECTION))
    rest = document[end + 1 :] if end >= 0 else ""
    return document[:start] + section + ("\n" + rest if rest else "")


# -- command line ----------------------------------------------------------------------------------------------


def _isolate(argv: Sequence[str]) -> None:
    """Re-execute in a new user and network namespace with only loopback up (Linux; else do nothing)."""
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if os.environ.get(_ISOLATED) or unshare is None or ip is None:
        return
    probe = subprocess.run([unshare, "-rn", ip, "link", "set", "lo", "up"], capture_output=True, timeout=10)
    if probe.returncode != 0:
        why = "cannot isolate the network (unshare -rn failed); running without"
        print(f"dev.real_agents.turns: {why}", file=sys.stderr)
        return
    script = f'{ip} link set lo up && exec "$@"'
    command = [unshare, "-rn", "sh", "-c", script, "sh", sys.executable, "-m", "dev.real_agents.turns", *argv]
    os.execve(unshare, command, {**os.environ, _ISOLATED: "1"})


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m dev.real_agents.turns", description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", action="append", default=[], metavar="NAME", help="only this agent (repeatable)")
    parser.add_argument("--out", type=Path, help="replace the whole-turns section of this markdown file")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="install folder (default %(default)s)")
    parser.add_argument("--turn-timeout", type=float, default=90.0, metavar="S")
    parser.add_argument("--registry", default=REGISTRY, help="where registry ids are looked up (default %(default)s)")
    parser.add_argument("--no-isolate", action="store_true", help="do not run in a loopback-only network namespace")
    args = parser.parse_args(argv)
    if not args.no_isolate:
        _isolate(argv)
    isolated = "a network namespace with loopback only (`unshare -rn`)" if os.environ.get(_ISOLATED) else "not isolated"
    try:
        table = load_agents(registry=args.registry)
    except (OSError, TableError) as exc:
        print(f"dev.real_agents.turns: {exc}", file=sys.stderr)
        return 2
    unknown = [name for name in args.agent if name not in table]
    if unknown:
        parser.error(f"unknown agent(s) {unknown}; known: {', '.join(table)}")
    specs = [table[name] for name in args.agent] if args.agent else [s for s in table.values() if s.model]
    reports: list[TurnReport] = []
    for spec in specs:
        if spec.model is None:
            print(f"{spec.name}: no model wiring, skipped", file=sys.stderr)
            continue
        if spec.installed_version(args.cache) != spec.version:
            print(f"{spec.name}: {spec.spec} not installed (python -m dev.real_agents.install)", file=sys.stderr)
            return 2
        target = Target.from_spec(spec, args.cache)
        print(f"{spec.name}: whole turns against the scripted model ({spec.model})", file=sys.stderr, flush=True)
        report = anyio.run(functools.partial(run_turns, target, spec.model, limit=args.turn_timeout))
        for name in report.checks:
            print(f"  {name}: {report.cell(name).render()}", file=sys.stderr)
        for note in report.notes:
            print(f"  note: {note}", file=sys.stderr)
        print(f"  ({report.seconds:.1f} s; {', '.join(report.requests)})", file=sys.stderr, flush=True)
        reports.append(report)
    command = (
        "make real-agents"
        if not args.agent
        else " ".join(["python -m dev.real_agents.turns", *(f"--agent {a}" for a in args.agent)])
    )
    when = time.strftime("%Y-%m-%d %H:%M %Z")
    section = render_section(reports, command=command, when=when, environment=environment_line(), isolated=isolated)
    if args.out is not None:
        old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        args.out.write_text(replace_section(old, section), encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(section)
    return 1 if any(report.failed for report in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
