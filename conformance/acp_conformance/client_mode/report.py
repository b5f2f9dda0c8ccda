"""Client mode's report: the verdict by the runner's tiers (``runner.verdict``), and the text, JSON, JUnit and
HTML forms, laid out as agent mode's (``runner.text``, ``runner.html_report``). Sans-IO: strings from a
``ClientReport``.

Beyond agent mode's verdicts: a client that completed no handshake in any run is *not checked* (``problem``);
a run of some scenarios or versions only (``--scenario``, ``--protocol``) is ``partial``, naming the runs not
played.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree

from ..runner.baseline import Baseline
from ..runner.excerpt import focus
from ..runner.html_report import render_report
from ..runner.text import NOT_CHECKED_ROW, counts_line, tier_legend, verdict_lines, wrapped
from ..runner.verdict import CONFORMANT, PARTIAL, Coverage, Verdict, tally
from .judge import NOT_TESTED, ClientCheck, Run

__all__ = ["REPORT_FORMAT", "STATUS", "ClientReport", "client_verdict", "html", "junit", "table", "to_json"]

REPORT_FORMAT = 3  # "reportFormat" of client mode's JSON report (its schema: client_mode/report.schema.json)
STATUS = {"pass": "PASS", "fail": "FAIL", "n/a": "SKIPPED", NOT_TESTED: "NOT_TESTED"}
TRANSCRIPT_LINES = 200  # the last lines of a failed check's run kept in the report
LINE_LIMIT = 4000  # characters kept of each of those lines


@dataclass
class ClientReport:
    client: list[str]
    runs: list[Run]
    results: list[tuple[ClientCheck, str, str]]  # (check, status, message)
    seconds: float
    problem: str | None = None  # why the client could not be checked at all (judge.unchecked)
    not_played: list[str] = field(default_factory=list)  # "scenario/vN" runs the selection left out
    selection: str = ""  # the options that chose the runs (--scenario, --protocol), as typed


def client_verdict(report: ClientReport, baseline: Baseline | None = None) -> Verdict:
    """The verdict as agent mode's: conformant, partial (runs left out, nothing deciding), non_conformant."""
    result = tally([(c.id, c.tier, STATUS[status]) for c, status, _ in report.results], baseline)
    deciding = result.failed + result.untested
    if deciding or report.problem is not None:
        name = "non_conformant"
    elif report.not_played:
        name = PARTIAL
    else:
        name = CONFORMANT
    coverage = Coverage(len(report.runs), tuple(report.not_played), report.selection)
    return Verdict(name, False, False, result.counts, result.statuses, deciding, result.baseline, coverage)


def _failed_run(report: ClientReport, message: str) -> Run | None:
    return next((r for r in report.runs if message.startswith(r.label)), None)


def _transcript(run: Run | None, message: str) -> tuple[list[dict[str, Any]], int | None]:
    """The failing run's lines ("sent" by the client), its last ``TRANSCRIPT_LINES``, and the one the failure is
    about (the client's line the message quotes most)."""
    if run is None:
        return [], None
    lines = [
        {"direction": "sent" if ln.direction == "in" else "received", "seconds": ln.t, "line": ln.raw[:LINE_LIMIT]}
        for ln in run.lines
    ][-TRANSCRIPT_LINES:]
    return lines, focus(message, [(str(w["direction"]), str(w["line"])) for w in lines], "sent")


def to_json(report: ClientReport, verdict: Verdict) -> str:
    checks = []
    for c, status, message in report.results:
        failed = status == "fail"
        run = _failed_run(report, message) if failed else None
        transcript, offending = _transcript(run, message) if failed else (None, None)
        checks.append(
            {
                "id": c.id,
                "title": c.title,
                "tier": c.tier.value,
                "status": STATUS[status],
                "rules": list(c.rules),
                "message": message,
                "transcript": transcript,
                "offendingLine": offending,
                "stderrTail": (run.stderr_tail if run else []) if failed else None,
            }
        )
    outcome, coverage = verdict.baseline, verdict.coverage
    data = {
        "reportFormat": REPORT_FORMAT,
        "mode": "client",
        "client": shlex.join(report.client),
        "problem": report.problem,
        "verdict": {
            "verdict": verdict.verdict,
            "conformant": verdict.conformant_json,
            "deciding": verdict.deciding,
            "tier_counts": verdict.tier_counts,
            "baseline": {"known": outcome.known, "new": outcome.new, "stale": outcome.stale, "unused": outcome.unused},
            "selection": coverage.selection or None,
            "runs_played": coverage.run,
            "runs_total": coverage.total,
            "not_run": list(coverage.not_run),
        },
        "seconds": round(report.seconds, 3),
        "runs": [
            {
                "scenario": r.scenario,
                "agentVersion": r.version,
                "negotiated": r.negotiated,
                "exitCode": r.exit_code,
                "seconds": round(r.seconds, 3),
            }
            for r in report.runs
        ],
        "checks": checks,
    }
    return json.dumps(data, indent=2)


def html(report: ClientReport, verdict: Verdict) -> str:
    """The page (``--html``): agent mode's, with the client's side marked as sent."""
    return render_report(json.loads(to_json(report, verdict)), "ACP client conformance report")


def junit(report: ClientReport) -> str:
    """JUnit XML, as agent mode writes it: a testcase per check, its tier as a property."""
    failures = sum(status == "fail" for _, status, _ in report.results)
    skipped = sum(status not in ("pass", "fail") for _, status, _ in report.results)
    suite = ElementTree.Element(
        "testsuite",
        name="acp-conformance client",
        tests=str(len(report.results)),
        failures=str(failures),
        skipped=str(skipped),
        time=f"{report.seconds:.3f}",
    )
    properties = ElementTree.SubElement(suite, "properties")
    ElementTree.SubElement(properties, "property", name="client", value=shlex.join(report.client))
    for c, status, message in report.results:
        case = ElementTree.SubElement(suite, "testcase", classname="acp-conformance.client", name=c.id)
        case_properties = ElementTree.SubElement(case, "properties")
        ElementTree.SubElement(case_properties, "property", name="tier", value=c.tier.value)
        if status == "fail":
            ElementTree.SubElement(case, "failure", message=message).text = f"{c.title}\nrules: {', '.join(c.rules)}"
        elif status != "pass":
            ElementTree.SubElement(case, "skipped", message=message)
    return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True)


def table(report: ClientReport, verdict: Verdict) -> str:
    """The text report, in agent mode's columns: status, id, tier, rules; each message below its row."""
    lines = [f"ACP client conformance: {shlex.join(report.client)}"]
    if report.problem:
        lines += wrapped(f"NOT CHECKED: {report.problem}", "")
    lines += tier_legend("client")
    lines.append("")
    words = [STATUS[status] for _, status, _ in report.results]
    mark_width = max([len(w) for w in words] + [4])
    width = max([len(c.id) for c, _, _ in report.results] + [5])
    indent = " " * (2 + mark_width + 2 + 2)
    for (c, status, message), word in zip(report.results, words, strict=True):
        lines += wrapped(", ".join(c.rules), f"  {word:<{mark_width}}  {c.id:<{width}}  {c.tier.value[:4]}  ", "")
        if message and status != "pass":
            unchecked = report.problem is not None and message == f"not run: {report.problem}"
            lines += wrapped(NOT_CHECKED_ROW if unchecked else message, indent)
    runs = ", ".join(f"{r.scenario}/v{r.version}:{r.exit_code}" for r in report.runs)
    lines += ["", *wrapped(f"runs (scenario/agent version:exit status): {runs or 'none'}", "")]
    lines.append(f"{counts_line(words)}; {report.seconds:.1f} s")
    lines += verdict_lines(verdict, "runs played")
    return "\n".join(lines)
