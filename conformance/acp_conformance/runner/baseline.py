"""Expected failures (``--baseline FILE``): known failures do not fail the run, new ones and stale entries do.

The file is JSON: ``{"expectedFailures": {"<check id>": "<why it is expected to fail>", ...}}``. A baselined
check that fails is *known*; a failing check that is not in the file is *new*; a baselined check that now
passes is *stale* (the run fails and names it, so the entry gets removed and baselines do not rot); a
baselined check that did not run this time (not applicable, not selected) is *unused*.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Baseline", "BaselineError", "BaselineOutcome", "apply_baseline", "load_baseline", "write_baseline"]


class BaselineError(ValueError):
    """The baseline file cannot be used: unreadable, not JSON, or not the documented shape."""


@dataclass(frozen=True)
class Baseline:
    source: str
    expected: dict[str, str]  # check id -> reason


@dataclass
class BaselineOutcome:
    known: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)


def load_baseline(path: str | Path) -> Baseline:
    try:
        data: Any = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BaselineError(f"--baseline {path}: {exc}") from None
    expected = data.get("expectedFailures") if isinstance(data, dict) else None
    if not isinstance(expected, dict):
        raise BaselineError(f'--baseline {path}: expected {{"expectedFailures": {{"<check id>": "<reason>"}}}}')
    for check_id, reason in expected.items():
        if not isinstance(reason, str) or not reason.strip():
            raise BaselineError(f"--baseline {path}: {check_id!r} needs a reason (a non-empty string)")
    return Baseline(str(path), dict(expected))


def apply_baseline(baseline: Baseline | None, statuses: dict[str, str]) -> BaselineOutcome:
    """Sort the checks by the baseline; ``statuses``: check id -> PASS / FAIL / SKIPPED / NOT_TESTED.
    Without a baseline nothing is known, new or stale (the outcome is empty)."""
    outcome = BaselineOutcome()
    if baseline is None:
        return outcome
    expected = baseline.expected
    for check_id, status in statuses.items():
        if status == "FAIL":
            (outcome.known if check_id in expected else outcome.new).append(check_id)
        elif status == "PASS" and check_id in expected:
            outcome.stale.append(check_id)
    outcome.unused = [c for c in expected if statuses.get(c) not in ("FAIL", "PASS")]
    return outcome


def write_baseline(path: str | Path, failures: dict[str, str], *, agent: str) -> None:
    """Write the failing checks as the expected ones, each with its failure message as a reason to edit."""
    data = {
        "agent": agent,
        "expectedFailures": {check_id: reason or "fails" for check_id, reason in sorted(failures.items())},
    }
    Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
