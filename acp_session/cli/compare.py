"""``acp-session compare --agent A --agent B [...] PROMPT``: the same prompt to several agents at once, each in
its own copy of the working directory (``workcopy``), then a side-by-side summary: the reply, tool calls, files
changed (a diffstat), tokens, time and stop reason; ``--json`` for scripts.

Nobody is asked anything while the agents work: permission requests get the policy's answer (``--approve-all``,
``--approve-reads``, ``--deny-all``, ``--allow`` / ``--deny``; default: refused), and the user's directory is
only read (the copies are removed afterwards unless ``--keep``; a symbolic link that leads out of the directory
leads nowhere outside its copy: ``copy_links``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

import anyio

from acp_session import __version__
from acp_session.client import ClientBuilder, PermissionPolicy
from acp_session.codec import to_builtins
from acp_session.errors import AcpError
from acp_session.registry import RegistryError

from .agents import agent_from_args
from .config_file import ConfigError, load_config, profile_of
from .daily import policy_reason
from .exits import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from .messages import describe
from .options import _Rule, policy_from
from .safe_text import json_safe
from .screen import Screen, say
from .workcopy import FileChange, WorkCopy

__all__ = ["AgentRun", "main"]

DEFAULT_TIMEOUT = 600.0


@dataclass
class AgentRun:
    """One agent's column: what it was, where it worked, and what its turn produced."""

    label: str
    spec: str
    argv: Any = None
    workdir: str = ""
    copy_kind: str = ""
    stop_reason: str | None = None
    reply: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    files: list[FileChange] = field(default_factory=list)
    tokens: int | None = None
    seconds: float = 0.0
    error: str | None = None
    decisions: list[dict[str, Any]] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "agent": self.spec,
            "workdir": self.workdir,
            "copy": self.copy_kind,
            "stop_reason": self.stop_reason,
            "reply": self.reply,
            "tool_calls": self.tool_calls,
            "files": [vars(change) for change in self.files],
            "tokens": self.tokens,
            "seconds": round(self.seconds, 3),
            "error": self.error,
            "permissions": self.decisions,
        }


def _fail(message: str) -> NoReturn:
    say(f"acp-session compare: error: {message}; see acp-session compare --help")
    sys.exit(EXIT_USAGE)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-session compare",
        description="Send PROMPT to every --agent at once, each in its own copy of --cwd (a git worktree at HEAD "
        "plus your uncommitted changes when it is a repository, else a temporary copy), then print a summary "
        "side by side: reply, tool calls, files changed, tokens, time, stop reason. Your directory is not touched.",
    )
    parser.add_argument("prompt", nargs="+", metavar="PROMPT", help="the prompt (several words are joined)")
    parser.add_argument(
        "--agent",
        metavar="ID|COMMAND|PROFILE",
        action="append",
        required=True,
        help="an agent: a registry id, a command line or a config profile; two or more, repeatable",
    )
    parser.add_argument("--cwd", metavar="DIR", default=None, help="the directory copied for each agent (default: .)")
    parser.add_argument("--json", action="store_true", help="one JSON object (a compare record) instead of the table")
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"cancel an agent's turn still running after SECONDS (default: {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument("--keep", action="store_true", help="keep the copies (their paths are printed)")
    parser.add_argument("--approve-all", "--yes", "-y", dest="yes", action="store_true", help="approve every request")
    parser.add_argument("--approve-reads", action="store_true", help="approve reads and searches, refuse the rest")
    parser.add_argument("--deny-all", action="store_true", help="refuse every request (the default)")
    parser.add_argument("--allow", metavar="KIND[:GLOB]", action=_Rule, const="allow", help="approve by kind/path")
    parser.add_argument("--deny", metavar="KIND[:GLOB]", action=_Rule, const="deny", help="refuse by kind/path")
    return parser


def _labels(specs: list[str]) -> list[str]:
    """Column names: each --agent as given (its program without the folder, cut short), numbered when alike."""
    names = []
    for spec in specs:
        try:
            words = shlex.split(spec)
        except ValueError:
            words = [spec]
        short = " ".join([os.path.basename(words[0]) if words else spec, *words[1:]])
        names.append(short if len(short) <= 28 else short[:27] + "\u2026")
    labels = []
    for index, name in enumerate(names):
        labels.append(f"{name}#{names[: index + 1].count(name)}" if names.count(name) > 1 else name)
    return labels


def _resolve(spec: str, config: dict[str, Any]) -> Any:
    """The argv (or registry ``AgentCommand``) for one --agent value; ``ValueError`` says why it cannot run."""
    _, profile, _ = profile_of(config, spec)
    value = profile.get("command", profile.get("id", spec))
    try:
        command = agent_from_args(argparse.Namespace(agent=value, registry=None, preview=False))
    except RegistryError as exc:
        raise ValueError(str(exc)) from None
    if command is not None:
        return command
    try:
        argv = shlex.split(value)
    except ValueError as exc:
        raise ValueError(f"--agent {spec!r}: {exc}") from None
    if not argv or shutil.which(argv[0]) is None:
        raise ValueError(f"agent command not found: {argv[0] if argv else spec!r}")
    return argv


async def _run_one(
    run: AgentRun, prompt: str, policy: PermissionPolicy, timeout: float, *, defaulted: bool = False
) -> None:
    from acp_session.conversation import TurnTimeout

    def decided(request: Any, decision: Any) -> None:
        rule = policy_reason(decision.reason) + (", the default" if defaulted else "")
        record = {"title": request.title, "answer": decision.option_id, "decision": decision.action, "policy": rule}
        run.decisions.append(record)

    builder = ClientBuilder("acp-session", __version__).permission_policy(
        policy.with_root(run.workdir), on_decision=decided
    )
    started = time.monotonic()
    try:
        async with builder.spawn(run.argv, cwd=run.workdir) as client:
            conversation = await client.start_conversation(run.workdir)
            try:
                response = await conversation.chat_to_completion(prompt, timeout=timeout)
            except TurnTimeout:
                run.stop_reason, run.error = "cancelled", f"over --timeout {timeout:g} s"
                response = None
            if response is not None:
                run.stop_reason = response.stop_reason
                run.reply = response.text
                run.tokens = response.usage.total_tokens if response.usage is not None else None
                if response.error is not None:
                    run.error = response.error.message
            run.tool_calls = [
                {"id": c.tool_call_id, "title": c.title, "kind": c.kind, "status": c.status}
                for c in conversation.state.tool_calls.values()
            ]
            if run.tokens is None and conversation.state.last_turn_usage is not None:
                run.tokens = conversation.state.last_turn_usage.total_tokens
            await conversation.disconnect(timeout=3)
    except (AcpError, OSError) as exc:
        run.error = describe(exc).message
    finally:
        run.seconds = time.monotonic() - started


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if len(args.agent) < 2:
        _fail("compare needs two or more --agent")
    cwd = Path(args.cwd or os.getcwd()).resolve()
    if not cwd.is_dir():
        _fail(f"--cwd is not a directory: {cwd}")
    args.cwd = str(cwd)
    prompt = " ".join(args.prompt).strip()
    if not prompt:
        _fail("the prompt is empty")
    try:
        given = policy_from(args)
        config = load_config()
    except (ValueError, ConfigError) as exc:
        _fail(str(exc))
    policy = given or PermissionPolicy.deny_all()  # nobody is asked: without a policy, every request is refused
    runs = [AgentRun(label, spec) for label, spec in zip(_labels(args.agent), args.agent, strict=True)]
    for run in runs:
        try:
            run.argv = _resolve(run.spec, config)
        except ValueError as exc:
            say(f"acp-session compare: {exc}")
            return EXIT_ERROR
    parent = Path(tempfile.mkdtemp(prefix="acp-session-compare-"))
    copies: list[WorkCopy] = []
    try:
        for index, run in enumerate(runs):
            try:
                copy = WorkCopy(cwd, parent, f"agent-{index + 1}")
            except OSError as exc:  # UnsafeLink included: a link of the directory that cannot be made safe
                say(f"acp-session compare: cannot copy {cwd}: {exc}")
                return EXIT_ERROR
            copies.append(copy)
            run.workdir, run.copy_kind = str(copy.path), copy.kind
        for notice in copies[0].notices:  # the same for every copy
            say(f"acp-session compare: {notice}")

        async def everyone() -> None:
            async with anyio.create_task_group() as tg:
                for run in runs:
                    tg.start_soon(partial(_run_one, defaulted=given is None), run, prompt, policy, args.timeout)

        anyio.run(everyone)
        for run, copy in zip(runs, copies, strict=True):
            run.files = copy.changes()
    finally:
        if not args.keep:
            for copy in copies:
                copy.remove()
            shutil.rmtree(parent, ignore_errors=True)
    if args.json:
        record = {"event": "compare", "prompt": prompt, "cwd": str(cwd), "kept": args.keep}
        record["agents"] = [to_builtins(run.record()) for run in runs]
        Screen(sys.stdout).line(json_safe(json.dumps(record, ensure_ascii=False)))
    else:
        print_summary(runs, kept=args.keep)
    return EXIT_OK if all(run.error is None for run in runs) else EXIT_ERROR


def _files_cell(files: list[FileChange]) -> str:
    if not files:
        return "none"
    return f"{len(files)} (+{sum(f.added for f in files)} -{sum(f.removed for f in files)})"


def _one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _permissions_cell(decisions: list[dict[str, Any]]) -> str:
    """``none``, or how many requests the policy allowed and refused: ``1 refused``, ``2 allowed, 1 refused``."""
    if not decisions:
        return "none"
    allowed = sum(1 for d in decisions if d["decision"] == "allow")
    refused = len(decisions) - allowed
    return ", ".join(f"{n} {word}" for n, word in ((allowed, "allowed"), (refused, "refused")) if n)


def print_summary(runs: list[AgentRun], *, kept: bool = False, width: int = 32) -> None:
    """The table (one column per agent), a note when the default policy refused a request, then each agent's
    changed files, permission requests and its whole reply."""
    rows = [
        ("agent", [run.label for run in runs]),
        ("stop reason", [run.stop_reason or "-" for run in runs]),
        ("time", [f"{run.seconds:.1f} s" for run in runs]),
        ("tokens", [f"{run.tokens:,}" if run.tokens is not None else "-" for run in runs]),
        ("tool calls", [str(len(run.tool_calls)) for run in runs]),
        ("files changed", [_files_cell(run.files) for run in runs]),
        ("permissions", [_permissions_cell(run.decisions) for run in runs]),
        ("reply", [_one_line(run.reply, width) or "-" for run in runs]),
        ("error", [_one_line(run.error or "-", width) for run in runs]),
    ]
    screen = Screen(sys.stdout)
    widths = [max(len(row[1][i]) for row in rows) for i in range(len(runs))]
    head = max(len(name) for name, _ in rows)
    for name, cells in rows:
        screen.line(
            name.ljust(head) + "  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()
        )
    if any(d["policy"].endswith(", the default") and d["decision"] == "deny" for run in runs for d in run.decisions):
        screen.line()
        screen.line(
            "Nobody is asked during compare, and without a policy every permission request is refused: "
            "--approve-all, --approve-reads or --allow KIND[:GLOB] let the agents do what they asked."
        )
    for run in runs:
        screen.line()
        screen.line(f"--- {run.label}: {run.spec}" + (f" (kept in {run.workdir})" if kept else ""))
        for decision in run.decisions:
            answer = "allowed" if decision["decision"] == "allow" else "refused"
            title = _one_line(str(decision["title"] or "permission"), 60)
            screen.line(f"  [permission] {title}: {answer} ({decision['policy']})")
        for change in run.files:
            counts = "binary" if change.binary else f"+{change.added} -{change.removed}"
            screen.line(f"  {change.path} | {change.status} {counts}")
        for call in run.tool_calls:
            screen.line(
                f"  [tool] {_one_line(str(call['title'] or call['id']), 60)} ({call['kind']}): {call['status']}"
            )
        if run.reply:
            screen.line(run.reply.rstrip("\n"), newlines=True)
