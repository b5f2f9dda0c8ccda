"""Report formats: a readable text report grouped by rule area, JSON, JUnit XML."""

from __future__ import annotations

import json
import shlex
import textwrap
from collections.abc import Sequence
from typing import Any
from xml.etree import ElementTree

from .kit import kit_rows
from .registry import AREAS
from .run import CheckResult, RunReport
from .text import NOT_CHECKED_ROW, counts_line, status_word, tier_legend, verdict_lines, wrapped
from .tiers import classify, rule_ids
from .verdict import Verdict, judge

__all__ = ["REPORT_FORMAT", "junit", "rerun_command", "rerun_helps", "summary", "table", "to_json", "verdict_lines"]

REPORT_FORMAT = 3  # "reportFormat" of the JSON report (its schema: acp_conformance/runner/report.schema.json)


def summary(results: Sequence[CheckResult]) -> dict[str, int]:
    counts = {"pass": 0, "fail": 0, "warn": 0, "n/a": 0}
    for r in results:
        counts[r.status] += 1
    return counts


def rerun_command(base: Sequence[str], check_id: str) -> str:
    """The command line that runs one check again (``base``: the runner's own arguments, ``--check`` removed)."""
    return shlex.join([*base, "--check", check_id])


def _agent_line(report: RunReport) -> str:
    info = report.agent
    name = f"{info.get('name', '?')} {info.get('version', '?')}" if info else "no agentInfo"
    version = f"protocol version {report.version}" if report.version is not None else "no protocol version"
    if report.scenarios.source:
        scenarios = f"scenarios from {report.scenarios.source} ({', '.join(report.scenarios.entries) or 'none'})"
    else:
        scenarios = "no scenario file"
    return f"agent: {name}, {version}; {scenarios}"


def _login_lines(report: RunReport) -> list[str]:
    login = report.login
    if login is None:
        return []
    blocked = [r.id for r in report.results if r.blocked == "login"]
    lines = [f"LOGIN REQUIRED: {login.message()}."]
    lines += textwrap.wrap(
        f"Not run for lack of a login ({len(blocked)}): {', '.join(blocked)}.",
        118,
        initial_indent="  ",
        subsequent_indent="    ",
        break_on_hyphens=False,
    )
    lines.append("  Log in and run again:" if login.methods else "  The agent advertises no login method:")
    lines += [f"    {m}" for m in login.methods] or ["    log in with the agent's own tool first, then run again"]
    return lines


def _version(report: RunReport) -> int:
    return report.check_set


def rerun_helps(result: CheckResult, report: RunReport) -> bool:
    """A rerun line is shown for a failure or a warning, when the run had other checks to leave out."""
    return result.status in ("fail", "warn") and len(report.results) > 1


def table(report: RunReport, base: Sequence[str] = (), verdict: Verdict | None = None) -> str:
    """The text report: a header, the login notice if any, then the checks grouped by rule area, in columns
    (status, id, time, tier, rules) with each check's details below it; the counts and the verdict last."""
    verdict = verdict if verdict is not None else judge(report)
    results = report.results
    check_set = f"v{report.version} check set" if report.version is not None else "no protocol version agreed"
    lines = [f"ACP conformance ({check_set}): {shlex.join(report.argv)}", _agent_line(report)]
    if report.problem:
        lines.append(f"NOT CHECKED: {report.problem}")
    elif report.version_mismatch:
        lines.append(
            f"VERSION MISMATCH: --expect-version {report.expected_version}, the agent agreed to version "
            f"{report.version} (its checks ran; the verdict is blocked_by_version_mismatch)"
        )
    lines += _login_lines(report)
    if report.session_error is not None:
        blocked = [r.id for r in results if r.blocked == "session"]
        lines += wrapped(
            f"NO SESSION: session/new fails ({report.session_error}). "
            f"Not run without a session ({len(blocked)}): {', '.join(blocked)}.",
            "  ",
        )
    lines += tier_legend("agent")
    words = {r.id: status_word(verdict.statuses[r.id], r.status == "warn") for r in results}
    shown = [r for r in results if r.blocked is None]
    mark_width = max([len(words[r.id]) for r in shown] + [4])
    width = max([len(r.id) for r in shown] + [5])
    indent = " " * (2 + mark_width + 2 + 2)
    for area in AREAS:
        in_area = [r for r in shown if r.area == area]
        if not in_area:
            continue
        lines += ["", area.capitalize()]
        for r in in_area:
            rules = ", ".join(r.rules)
            tier = classify(_version(report), r.id).tier.value[:4]
            row = f"  {words[r.id]:<{mark_width}}  {r.id:<{width}}  {r.seconds:6.2f}s  {tier}  "
            lines += wrapped(rules, row, "") if rules else [row.rstrip()]  # long rule lists stay in their column
            unchecked = report.problem is not None and r.message == f"not run: {report.problem}"
            details = [NOT_CHECKED_ROW if unchecked else r.message] if r.message else []
            if r.scenarios:
                details.append("scenario " + "; ".join(r.scenarios))
            for text in details:
                lines += wrapped(text, indent)
            if base and rerun_helps(r, report):
                lines.append(f"{indent}rerun: {rerun_command(base, r.id)}")
    took = f"{report.seconds:.1f} s"
    if not report.remote:  # --url: connections, not processes of the agent's
        took += f", {report.processes} agent process{'es' if report.processes != 1 else ''}"
    lines += ["", f"{counts_line(list(words.values()))}; {took}"]
    lines += verdict_lines(verdict)
    return "\n".join(lines)


def _check_json(report: RunReport, r: CheckResult, verdict: Verdict, base: Sequence[str]) -> dict[str, Any]:
    version = _version(report)
    entry = classify(version, r.id)
    outcome = verdict.baseline
    baseline = "known" if r.id in outcome.known else "stale" if r.id in outcome.stale else None
    failed = r.status == "fail"
    return {
        "id": r.id,
        "title": r.title,
        "area": r.area,
        "tier": entry.tier.value,
        "status": verdict.statuses[r.id],
        "result": r.status,
        "rules": list(r.rules),
        "ruleIds": rule_ids(version, r.id, r.rules),
        "requirements": list(entry.requirements),
        "message": r.message,
        "warnings": r.warnings,
        "notes": r.notes,
        "scenarios": r.scenarios,
        "seconds": round(r.seconds, 3),
        "blockedBy": r.blocked,
        "baseline": baseline,
        "rerun": rerun_command(base, r.id) if base else None,
        "transcript": (
            [{"direction": w.direction, "seconds": w.seconds, "line": w.line} for w in r.transcript] if failed else None
        ),
        "offendingLine": r.offending if failed else None,
        "stderrTail": list(r.stderr_tail) if failed else None,
    }


_WORST = ("FAIL", "PASS", "NOT_TESTED", "SKIPPED")  # a requirement's status: the worst of its checks'


def requirement_statuses(report: RunReport, verdict: Verdict) -> dict[str, dict[str, Any]]:
    """The official kit's view: every id of its registry for the check set, with its tier and the worst status of
    the checks here that judge it (FAIL, then PASS, NOT_TESTED, SKIPPED), or NOT_TESTED and why (kit.py)."""
    ran = {r.id for r in report.results}
    out: dict[str, dict[str, Any]] = {}
    for row in kit_rows(_version(report)):
        checks = [c for c in row.checks if c in ran]
        if checks:
            status = min((verdict.statuses[c] for c in checks), key=_WORST.index)
            out[row.id] = {"tier": row.tier.value, "status": status, "checks": checks}
        else:
            reason = row.reason or f"its checks ({', '.join(row.checks)}) did not run"
            out[row.id] = {"tier": row.tier.value, "status": "NOT_TESTED", "checks": [], "reason": reason}
    return out


def to_json(report: RunReport, base: Sequence[str] = (), verdict: Verdict | None = None) -> str:
    verdict = verdict if verdict is not None else judge(report)
    outcome = verdict.baseline
    data: dict[str, Any] = {
        "reportFormat": REPORT_FORMAT,
        "agent": shlex.join(report.argv),
        "agentInfo": report.agent,
        "protocolVersion": report.version,
        "expectedVersion": report.expected_version,
        "checkSet": f"v{report.version}" if report.version is not None else None,
        "scenarios": {
            "file": report.scenarios.source,
            "entries": {
                name: {"prompt": s.prompt, "timeout": s.timeout} for name, s in report.scenarios.entries.items()
            },
        },
        "problem": report.problem,
        "sessionError": report.session_error,
        "login": (
            {
                "required": True,
                "refused": report.login.method,
                "error": report.login.error,
                "methods": report.login.methods,
            }
            if report.login is not None
            else None
        ),
        "summary": summary(report.results),
        "verdict": {
            "verdict": verdict.verdict,
            "conformant": verdict.conformant_json,
            "blocked_by_auth": verdict.blocked_by_auth,
            "blocked_by_version_mismatch": verdict.blocked_by_version_mismatch,
            "deciding": verdict.deciding,
            "tier_counts": verdict.tier_counts,
            "selection": verdict.coverage.selection or None,
            "checks_run": verdict.coverage.run,
            "checks_total": verdict.coverage.total,
            "not_run": list(verdict.coverage.not_run),
        },
        "baseline": {
            "known": outcome.known,
            "new": outcome.new,
            "stale": outcome.stale,
            "unused": outcome.unused,
        },
        "requirements": requirement_statuses(report, verdict),
        "seconds": round(report.seconds, 3),
        "processes": report.processes,
        "checks": [_check_json(report, r, verdict, base) for r in report.results],
    }
    return json.dumps(data, indent=2)


def junit(report: RunReport) -> str:
    results = report.results
    counts = summary(results)
    suite = ElementTree.Element(
        "testsuite",
        name=f"acp-conformance v{report.version}" if report.version is not None else "acp-conformance",
        tests=str(len(results)),
        failures=str(counts["fail"]),
        skipped=str(counts["n/a"]),
        time=f"{report.seconds:.3f}",
    )
    properties = ElementTree.SubElement(suite, "properties")
    ElementTree.SubElement(properties, "property", name="agent", value=shlex.join(report.argv))
    ElementTree.SubElement(properties, "property", name="protocolVersion", value=str(report.version))
    if report.scenarios.source:
        ElementTree.SubElement(properties, "property", name="scenarios", value=report.scenarios.source)
    for r in results:
        case = ElementTree.SubElement(
            suite,
            "testcase",
            classname=f"acp-conformance.{r.area.replace(' ', '-')}",
            name=r.id,
            time=f"{r.seconds:.3f}",
        )
        case_properties = ElementTree.SubElement(case, "properties")
        tier = classify(_version(report), r.id).tier.value
        ElementTree.SubElement(case_properties, "property", name="tier", value=tier)
        if r.status == "fail":
            ElementTree.SubElement(case, "failure", message=r.message).text = f"{r.title}\nrules: {', '.join(r.rules)}"
        elif r.status == "n/a":
            ElementTree.SubElement(case, "skipped", message=r.message)
        elif r.status == "warn":
            ElementTree.SubElement(case, "system-out").text = "warning: " + "\nwarning: ".join(r.warnings)
    return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True)
