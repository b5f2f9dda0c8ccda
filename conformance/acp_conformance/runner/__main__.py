"""``acp-conformance --agent "<command>"``: check an ACP agent (protocol v1 or v2) against the rules a client
can observe; ``acp-conformance client -- <client command>``: check an ACP client (``acp_conformance.client_mode``).
Exit status: 0 iff the verdict is conformant (and no baseline entry is stale), 1 non-conformant (a MANDATORY or
CAPABILITY check failed, or a MANDATORY one could not run) or a stale baseline, 2 usage error, 3 the agent
could not be checked (not started, or no shared protocol version), 4 partial (``--check``, ``--area`` or
``--tier`` left checks out, and those that ran decide nothing against the agent), 8 the agent requires a login."""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio

from acp_session.registry import RegistryError, named_agent
from acp_session.transport.remote import (
    RemoteDialer,
    parse_header,
    redact_url,
    resolve_ca_file,
)

from .baseline import BaselineError, load_baseline, write_baseline
from .checks_remote import REMOTE_CHECKS
from .registry import AREAS, CHECK_SETS, in_report_order
from .remote_agent import RUNNER_LIMITS
from .report import junit, table, to_json
from .run import RunOptions, run
from .scenarios import SCENARIO_HELP, ScenarioError, load_scenarios
from .selection import area_option
from .tiers import Tier
from .verdict import PARTIAL, judge

__all__ = ["main"]

EXIT_FAILED = 1
EXIT_NOT_STARTED = 3
EXIT_PARTIAL = 4
EXIT_LOGIN = 8
CLEAN_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "TMPDIR", "SYSTEMROOT")


def _epilog() -> str:
    lines = []
    for version in (2, 1):
        lines.append(f"checks for protocol v{version} agents (the negotiated version picks the set):")
        lines += [f"  {c.id:<28} {c.title}" for c in in_report_order(CHECK_SETS[version])]
        lines.append("")
    lines.append("transport checks of a remote agent (--url; ids ACP-HTTP-NNN / ACP-WS-NNN):")
    lines += [f"  {c.id:<28} {c.title}" for c in REMOTE_CHECKS]
    lines.append("")
    lines.append("scenarios (--scenarios FILE, TOML: NAME = PROMPT, or [NAME] prompt = ..., timeout = ...):")
    lines += [f"  {name:<12} {text}" for name, text in SCENARIO_HELP.items()]
    lines += [
        "",
        "exit status: 0 conformant, 1 non-conformant or a stale baseline entry, 2 usage, 3 agent not checked "
        "(not started, no shared protocol version), 4 partial (--check, --area or --tier left checks out; those "
        "run decide nothing against the agent), 8 login required",
        "",
        "client mode: acp-conformance client --help",
    ]
    return "\n".join(lines)


def _parser(prog: str = "acp-conformance", default_agent: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Check an ACP agent (spoken to over stdio, or with --url over HTTP or WebSocket) against the "
        "rules a client can observe. "
        "The version the agent answers at initialize (1 or 2) selects the check set.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    agent_help = 'the agent command line, e.g. "acp-reference-agent", or an ACP registry agent id (e.g. codex-acp)'
    target = parser.add_mutually_exclusive_group(required=default_agent is None)
    if default_agent is None:
        target.add_argument("--agent", help=agent_help)
    else:
        target.add_argument("--agent", help=f"{agent_help} (default: the bundled reference agent)")
    target.add_argument(
        "--url",
        help="check a remote agent over Streamable HTTP (http(s)://HOST/acp) or WebSocket (ws(s)://...): the agent "
        "checks through acp-session's remote transport, plus the transport's own rules (ACP-HTTP-*, ACP-WS-*)",
    )
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar='"NAME: VALUE"',
        help="with --url: send this header on every request (repeatable), e.g. an Authorization token",
    )
    parser.add_argument("--insecure", action="store_true", help="with --url: do not verify the server's certificate")
    parser.add_argument(
        "--ca-file",
        metavar="PATH",
        help="with --url https:// or wss://: trust the CA certificates in this PEM file instead of the default ones "
        "(a private or test CA); default: $SSL_CERT_FILE if set",
    )
    parser.add_argument("--registry", metavar="FILE|URL", help="the ACP agent registry for --agent ID")
    parser.add_argument(
        "--scenarios",
        metavar="FILE",
        help="TOML file of prompts that make this agent run long, ask permission, call tools, ... "
        "(default: the reference agent's own file for the reference agent, else none)",
    )
    parser.add_argument("--auth", metavar="METHOD", help="log in with this advertised auth method before checking")
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME[=VALUE]",
        help="set NAME for the agent, or pass NAME through from this environment (repeatable)",
    )
    parser.add_argument(
        "--clean-env",
        action="store_true",
        help=f"start the agent with only {', '.join(CLEAN_ENV[:-1])} and the --env variables",
    )
    parser.add_argument(
        "--protocol", type=int, choices=(1, 2), default=2, help="protocol version to offer (default 2, the newest)"
    )
    parser.add_argument(
        "--expect-version",
        type=int,
        choices=(1, 2),
        metavar="N",
        help="the protocol version the agent must agree to; another one makes the verdict "
        "blocked_by_version_mismatch (its check set still runs)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of text")
    parser.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    parser.add_argument("--html", metavar="FILE", help="also write the report as one self-contained web page to FILE")
    parser.add_argument(
        "--check",
        action="append",
        default=[],
        metavar="ID",
        help="run only this check (repeatable); a run of a subset ends with a partial verdict (exit 4 if it passes)",
    )
    parser.add_argument(
        "--area",
        action="append",
        default=[],
        choices=[area_option(a) for a in AREAS],
        metavar="AREA",
        help=f"run only the checks of this rule area (repeatable): {', '.join(area_option(a) for a in AREAS)}",
    )
    parser.add_argument(
        "--tier",
        action="append",
        default=[],
        type=str.upper,
        choices=[t.value for t in Tier],
        metavar="TIER",
        help="run only the checks of this tier (repeatable): " + ", ".join(t.value for t in Tier),
    )
    parser.add_argument("--jobs", type=int, default=4, help="agent processes checking in parallel (default 4)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds to wait for one answer, turn or cancellation (default 10; scenarios have their own)",
    )
    parser.add_argument("--strict", action="store_true", help="treat warnings (SHOULDs not followed) as failures")
    parser.add_argument(
        "--baseline",
        metavar="FILE",
        help='expected failures, JSON {"expectedFailures": {"<check id>": "<reason>"}}: known failures exit 0, '
        "new ones exit 1, entries that now pass exit 1 (stale)",
    )
    parser.add_argument(
        "--write-baseline", metavar="FILE", help="write this run's failing checks to FILE as a baseline (exit 0)"
    )
    return parser


def _environment(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in CLEAN_ENV} if args.clean_env else dict(os.environ)
    for item in args.env:
        name, sep, value = item.partition("=")
        if not name:
            parser.error(f"--env {item!r}: no variable name")
        if sep:
            env[name] = value
        elif name in os.environ:
            env[name] = os.environ[name]
        else:
            parser.error(f"--env {name}: not set in this environment (use --env {name}=VALUE)")
    return env


def _redacted(arg: str, previous: str | None) -> str:
    """An argument as a report may show it: a header's value (a token, often) and URL credentials hidden."""
    if previous == "--header":
        return arg.partition(":")[0].strip() + ": <redacted>"
    if arg.startswith("--header="):
        return "--header=" + arg.removeprefix("--header=").partition(":")[0].strip() + ": <redacted>"
    if previous == "--url":
        return redact_url(arg)
    if arg.startswith("--url="):
        return "--url=" + redact_url(arg.removeprefix("--url="))
    return arg


SELECTING = ("--check", "--area", "--tier")
_NOT_IN_RERUN = (*SELECTING, "--junit", "--html", "--write-baseline")  # options with a value a rerun drops


def _base_command(argv: list[str]) -> list[str]:
    """This invocation without --check/--area/--tier/--json/--junit/--html: what the report prints to rerun one
    check (with header values and URL credentials redacted)."""
    base = ["acp-conformance"]
    skip = False
    for index, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        arg = _redacted(arg, argv[index - 1] if index else None)
        if arg in _NOT_IN_RERUN and index + 1 < len(argv):
            skip = True
            continue
        if arg.startswith(tuple(f"{o}=" for o in _NOT_IN_RERUN)):
            continue
        if arg == "--json":
            continue
        base.append(arg)
    return base


def main(argv: list[str] | None = None, *, prog: str = "acp-conformance", default_agent: str | None = None) -> None:
    """Run the checks and exit with the status the epilog lists. ``prog`` and ``default_agent``: how
    ``acp-session conformance`` runs it (``--agent`` optional there, the reference agent by default)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["--agent"] and arguments[2:3] == ["client"]:
        arguments = arguments[2:]  # an --agent given before `client` is the agent mode's; client mode has its own
    if arguments[:1] == ["client"]:
        from acp_conformance.client_mode.cli import main as client_main

        client_main(arguments[1:])
        return
    parser = _parser(prog, default_agent)
    args = parser.parse_args(arguments)
    known = {c.id for checks in CHECK_SETS.values() for c in checks} | {c.id for c in REMOTE_CHECKS}
    unknown = [c for c in args.check if c not in known]
    if unknown:
        parser.error(f"unknown check(s): {', '.join(unknown)}")
    if args.url is not None:
        dialer = _dialer(args, parser)
        # A remote agent has no process to start: --timeout bounds its initialize as any other answer.
        options = RunOptions([dialer.display_url], **_common(args, parser), dialer=dialer, startup_timeout=args.timeout)
        _run_and_exit(args, arguments, options)
        return
    if (args.header or args.insecure or args.ca_file) and args.url is None:
        parser.error("--header, --insecure and --ca-file go with --url")
    if args.agent is None:
        args.agent = default_agent
    command = shlex.split(args.agent)
    if not command:
        parser.error("--agent is empty")
    env = _environment(args, parser)
    try:
        named = named_agent(args.agent, registry=args.registry)  # --agent ID: through the ACP agent registry
    except RegistryError as exc:
        sys.exit(f"acp-conformance: {exc}")
    if named is not None:
        command = named.argv
        env.update(named.env)
    if shutil.which(command[0], path=env.get("PATH")) is None:
        sys.exit(f"{prog}: agent command not found: {command[0]}")
    _run_and_exit(args, arguments, RunOptions(command, env=env, **_common(args, parser)))


def _common(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """The run options both targets (a command, a URL) share."""
    try:
        scenarios = load_scenarios(args.scenarios) if args.scenarios else None
        args.loaded_baseline = load_baseline(args.baseline) if args.baseline else None
    except (ScenarioError, BaselineError) as exc:
        parser.error(str(exc))
    return {
        "offer": args.protocol,
        "auth": args.auth,
        "scenarios": scenarios,
        "wait": args.timeout,
        "jobs": args.jobs,
        "only": args.check,
        "areas": args.area,
        "tiers": args.tier,
    }


def _dialer(args: argparse.Namespace, parser: argparse.ArgumentParser) -> RemoteDialer:
    if args.ca_file and args.insecure:
        parser.error("--ca-file and --insecure do not go together (--insecure checks no certificate)")
    try:
        headers = [parse_header(h) for h in args.header]
        return RemoteDialer(
            args.url,
            headers=headers,
            insecure=args.insecure,
            ca_file=resolve_ca_file(args.ca_file, insecure=args.insecure),
            # --timeout bounds each dial too (a WebSocket upgrade whose 101 dribbles), when it is the shorter.
            limits=dataclasses.replace(RUNNER_LIMITS, connect_timeout=min(args.timeout, RUNNER_LIMITS.connect_timeout)),
        )
    except ValueError as exc:
        parser.error(str(exc))


def _run_and_exit(args: argparse.Namespace, arguments: list[str], options: RunOptions) -> None:
    baseline = args.loaded_baseline
    report = anyio.run(run, options)
    report.expected_version = args.expect_version
    if args.expect_version is not None and report.version is not None and report.version != args.expect_version:
        report.version_mismatch = True
    verdict = judge(report, baseline)
    base = _base_command(arguments)
    try:
        print(to_json(report, base, verdict) if args.json else table(report, base, verdict), flush=True)
    except BrokenPipeError:  # ``| head``: the reader has what it wanted; no traceback, the status still counts
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if args.junit:
        Path(args.junit).write_text(junit(report), encoding="utf-8")
    if args.html:
        from .html_report import html_report

        Path(args.html).write_text(html_report(report, base, verdict), encoding="utf-8")
    if args.write_baseline:
        failures = {r.id: r.message for r in report.results if r.status == "fail"}
        write_baseline(args.write_baseline, failures, agent=args.agent or redact_url(args.url))
        print(f"wrote {len(failures)} expected failure(s) to {args.write_baseline}", file=sys.stderr)
        sys.exit(0)
    warned = args.strict and any(r.status == "warn" for r in report.results)
    failed = [r.id for r in report.results if verdict.statuses[r.id] == "FAIL" and r.id in verdict.deciding]
    if failed or warned or verdict.baseline.stale:
        sys.exit(EXIT_FAILED)
    if verdict.conformant:
        sys.exit(0)
    if verdict.blocked_by_version_mismatch or report.problem is not None:
        sys.exit(EXIT_NOT_STARTED)
    if verdict.blocked_by_auth:
        sys.exit(EXIT_LOGIN)
    if verdict.verdict == PARTIAL:
        sys.exit(EXIT_PARTIAL)
    sys.exit(EXIT_FAILED)


if __name__ == "__main__":
    main()
