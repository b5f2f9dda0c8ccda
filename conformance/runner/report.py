"""Report formats: a readable table, JSON, JUnit XML."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from xml.etree import ElementTree

from .run import CheckResult

__all__ = ["junit", "summary", "table", "to_json"]


def summary(results: Sequence[CheckResult]) -> dict[str, int]:
    counts = {"pass": 0, "fail": 0, "n/a": 0}
    for r in results:
        counts[r.status] += 1
    return counts


def table(results: Sequence[CheckResult], agent: str) -> str:
    width = max([len(r.id) for r in results] + [5])
    lines = [f"ACP v2 conformance: {agent}", ""]
    lines.append(f"{'check':<{width}}  result  time   rules")
    lines.append(f"{'-' * width}  ------  -----  -----")
    for r in results:
        mark = {"pass": "PASS", "fail": "FAIL", "n/a": "N/A"}[r.status]
        lines.append(f"{r.id:<{width}}  {mark:<6}  {r.seconds:4.1f}s  {', '.join(r.rules)}")
        if r.message and r.status != "pass":
            lines += textwrap.wrap(
                r.message, 110, initial_indent=" " * (width + 2), subsequent_indent=" " * (width + 4)
            )
    counts = summary(results)
    lines += ["", f"{counts['pass']} passed, {counts['fail']} failed, {counts['n/a']} not applicable"]
    return "\n".join(lines)


def to_json(results: Sequence[CheckResult], agent: str) -> str:
    return json.dumps(
        {
            "agent": agent,
            "summary": summary(results),
            "checks": [
                {
                    "id": r.id,
                    "title": r.title,
                    "rules": list(r.rules),
                    "result": r.status,
                    "message": r.message,
                    "seconds": round(r.seconds, 3),
                }
                for r in results
            ],
        },
        indent=2,
    )


def junit(results: Sequence[CheckResult], agent: str) -> str:
    counts = summary(results)
    suite = ElementTree.Element(
        "testsuite",
        name="acp-conformance",
        tests=str(len(results)),
        failures=str(counts["fail"]),
        skipped=str(counts["n/a"]),
        time=f"{sum(r.seconds for r in results):.3f}",
    )
    ElementTree.SubElement(ElementTree.SubElement(suite, "properties"), "property", name="agent", value=agent)
    for r in results:
        case = ElementTree.SubElement(
            suite, "testcase", classname="acp-conformance", name=r.id, time=f"{r.seconds:.3f}"
        )
        if r.status == "fail":
            ElementTree.SubElement(case, "failure", message=r.message).text = f"{r.title}\nrules: {', '.join(r.rules)}"
        elif r.status == "n/a":
            ElementTree.SubElement(case, "skipped", message=r.message)
    return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True)
