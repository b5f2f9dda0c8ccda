"""``acp-conformance client [options] -- <client command ...>``: run the client under test once per scenario and
protocol version, with the scripted agent's command appended to its command line, and judge it.

The driver contract (what a client's driver does with a run) is in docs/conformance.md ("Client mode"): the
client is started in a fresh directory with ``ACP_CONFORMANCE_SCENARIO`` (the scenario's name) and
``ACP_CONFORMANCE_PROMPT`` (the text to send) set, and the agent command as its last arguments.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import anyio

from ..runner.baseline import BaselineError, load_baseline
from ..runner.verdict import PARTIAL
from .drivers import DRIVERS
from .judge import CLIENT_CHECKS, Run, judge_runs, unchecked
from .policy import POLICY, POLICY_VARIABLE
from .report import ClientReport, client_verdict, html, junit, table, to_json
from .subject import run_subject

__all__ = ["EXIT_NOT_CHECKED", "EXIT_PARTIAL", "SCENARIOS", "ClientReport", "main", "run_client"]

# Scenario -> the protocol versions the scripted agent plays it with, and what it does.
SCENARIOS: dict[str, tuple[tuple[int, ...], str]] = {
    "basic": ((1, 2), "one plain turn; the client then closes the session and exits 0"),
    "early-update": ((1, 2), "an available_commands_update arrives before the session/new answer"),
    "unknown-variants": ((1, 2), "unknown auth method types, update kinds, tool kinds and content blocks"),
    "meta": ((1, 2), "a _meta object on every object the agent sends"),
    "long-line": ((1, 2), "one update of a 2 MiB line"),
    "permission": ((1, 2), "a permission request (answer it as the driver likes) and an unknown _ request"),
    "cancel": ((1, 2), "the driver cancels the turn at the first agent text; a permission request follows"),
    "cancel-pending": ((1, 2), "a permission request the driver leaves unanswered; it cancels at the agent's text"),
    "client-methods": ((1,), "the agent calls fs/read_text_file, fs/write_text_file and terminal/create"),
    "agent-dies": ((1, 2), "the agent exits mid-turn; the client must end (any status), without a traceback"),
    "permission-policy": (
        (1, 2),
        "permission requests about a read, an edit and a command; the driver answers by the policy it is given",
    ),
}
PROMPT = "Hello, scripted agent."
AGENT = [sys.executable, "-m", "acp_conformance.client_mode.agent"]
EXIT_FAILED = 1
EXIT_NOT_CHECKED = 3
EXIT_PARTIAL = 4


async def _one_run(client: list[str], scenario: str, version: int, root: str, limit: float) -> Run:
    sandbox = Path(root) / f"{scenario}-v{version}"
    sandbox.mkdir()
    (sandbox / "README.md").write_text("# A file for the scripted agent to read\n", encoding="utf-8")
    log = sandbox.parent / f"{scenario}-v{version}.log"
    log.touch()
    argv = [*client, *AGENT, "--scenario", scenario, "--version", str(version), "--log", str(log)]
    env = dict(os.environ, ACP_CONFORMANCE_SCENARIO=scenario, ACP_CONFORMANCE_PROMPT=PROMPT)
    if scenario == "permission-policy":
        env[POLICY_VARIABLE] = POLICY
    started = time.monotonic()
    try:
        ended = await run_subject(argv, sandbox, env, limit)
    except OSError as exc:  # not startable (not executable, gone): the run says so, the others go on
        run = Run(scenario, version, stderr_tail=[f"acp-conformance: could not start the client: {exc}"])
        run.exit_code = None
        return run
    exit_code, stderr = ended.exit_code, ended.stderr
    run = Run.from_log(scenario, version, log.read_text(encoding="utf-8", errors="replace"))
    run.exit_code = exit_code
    run.stderr_tail = stderr.decode("utf-8", "replace").splitlines()[-20:]
    run.seconds = time.monotonic() - started
    return run


async def run_client(
    client: list[str],
    *,
    scenarios: list[str] | None = None,
    versions: tuple[int, ...] = (1, 2),
    jobs: int = 4,
    limit: float = 15.0,
    keep_logs: str | None = None,
) -> ClientReport:
    """Run every (scenario, version) against ``client`` and judge the client from the runs. A choice of
    ``scenarios`` or ``versions`` that leaves runs out is recorded (``not_played``): the verdict is partial."""
    every = [(name, v) for name, (vs, _) in SCENARIOS.items() for v in vs]
    plan = [(name, v) for name, v in every if (not scenarios or name in scenarios) and v in versions]
    started = time.monotonic()
    root = tempfile.mkdtemp(prefix="acp-conformance-client-")
    runs: list[Run] = []
    limiter = anyio.CapacityLimiter(max(1, jobs))

    async def one(name: str, version: int) -> None:
        async with limiter:
            runs.append(await _one_run(client, name, version, root, limit))

    try:
        async with anyio.create_task_group() as tg:
            for name, version in plan:
                tg.start_soon(one, name, version)
    finally:
        if keep_logs is not None:
            Path(keep_logs).mkdir(parents=True, exist_ok=True)
            for log in Path(root).glob("*.log"):
                shutil.copy(log, Path(keep_logs) / log.name)
        shutil.rmtree(root, ignore_errors=True)
    order = {key: i for i, key in enumerate(plan)}
    runs.sort(key=lambda r: order[(r.scenario, r.version)])
    selection = [f"--scenario {name}" for name in scenarios or ()]
    selection += [f"--protocol {v}" for v in versions] if set(versions) != {1, 2} else []
    return ClientReport(
        list(client),
        runs,
        judge_runs(runs),
        time.monotonic() - started,
        problem=unchecked(runs),
        not_played=[f"{name}/v{v}" for name, v in every if (name, v) not in plan],
        selection=" ".join(selection),
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-conformance client",
        description="Check an ACP client: it is run once per scenario and protocol version with a scripted "
        "agent's command appended to its command line (after --), and every message it sends is judged.",
        epilog="scenarios:\n"
        + "\n".join(f"  {n:<17} v{'/v'.join(map(str, vs))}  {t}" for n, (vs, t) in SCENARIOS.items())
        + "\n\nchecks:\n"
        + "\n".join(f"  {c.id:<34} {c.tier.value:<11} {c.title}" for c in CLIENT_CHECKS)
        + "\n\nshipped drivers (the client command after --; docs/conformance.md has the driver contract):\n"
        + "\n".join(
            f"  python -m acp_conformance.client_mode.drivers.{name}\n      {text}" for name, text in DRIVERS.items()
        )
        + "\n\n"
        + textwrap.fill(
            "exit status: 0 conformant, 1 non-conformant or a stale baseline entry, 2 usage, 3 client not checked "
            "(no run completed a handshake: it never started the scripted agent, or sent it no initialize), "
            "4 partial (--scenario or --protocol left runs out; those played decide nothing against the client)",
            100,
            subsequent_indent="  ",
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--scenario", action="append", default=[], choices=sorted(SCENARIOS))
    parser.add_argument("--protocol", type=int, action="append", choices=(1, 2), help="agent versions (default both)")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=15.0, help="seconds one run of the client may take")
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of text")
    parser.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    parser.add_argument("--html", metavar="FILE", help="also write the report as one self-contained web page to FILE")
    parser.add_argument("--logs", metavar="DIR", help="keep each run's log (every line both ways) in DIR")
    parser.add_argument("--baseline", metavar="FILE")
    parser.add_argument("--write-baseline", metavar="FILE")
    parser.add_argument("client", nargs=argparse.REMAINDER, help="-- the client's command line")
    return parser


def main(argv: list[str]) -> None:
    parser = _parser()
    args = parser.parse_args(argv)
    client = args.client[1:] if args.client[:1] == ["--"] else args.client
    if not client:
        parser.error("no client command (give it after --)")
    found = shutil.which(client[0])
    if found is None:
        sys.exit(f"acp-conformance client: command not found: {client[0]}")
    client = [os.path.abspath(found), *client[1:]]  # each run starts in a directory of its own
    try:
        baseline = load_baseline(args.baseline) if args.baseline else None
    except BaselineError as exc:
        parser.error(str(exc))
    report = anyio.run(
        lambda: run_client(
            client,
            scenarios=args.scenario or None,
            versions=tuple(args.protocol or (1, 2)),
            jobs=args.jobs,
            limit=args.timeout,
            keep_logs=args.logs,
        )
    )
    verdict = client_verdict(report, baseline)
    try:
        print(to_json(report, verdict) if args.json else table(report, verdict), flush=True)
    except BrokenPipeError:  # ``| head``: the reader has what it wanted; no traceback, the status still counts
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if args.junit:
        Path(args.junit).write_text(junit(report), encoding="utf-8")
    if args.html:
        Path(args.html).write_text(html(report, verdict), encoding="utf-8")
    if args.write_baseline:
        from ..runner.baseline import write_baseline

        failures = {c.id: message for c, status, message in report.results if status == "fail"}
        write_baseline(args.write_baseline, failures, agent=shlex.join(client))
        sys.exit(0)
    failed = any(verdict.statuses[c] == "FAIL" for c in verdict.deciding)
    if failed or verdict.baseline.stale:
        sys.exit(EXIT_FAILED)
    if verdict.conformant:
        sys.exit(0)
    if report.problem is not None:
        sys.exit(EXIT_NOT_CHECKED)
    sys.exit(EXIT_PARTIAL if verdict.verdict == PARTIAL else EXIT_FAILED)
