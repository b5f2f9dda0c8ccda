"""acp-conformance against the agent written with the official TypeScript SDK (results: docs/interop.md)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Checks that need the reference agent's scenarios are n/a for any other agent (docs/conformance.md).
REFERENCE_ONLY = {
    "cancel-turn",
    "cancel-permission",
    "permission-flow",
    "held-prompt-cancel-request",
    "cancel-held-prompts",
    "close-active-work",
    "background-work",
}
# The SDK answers a repeated initialize asking for a version below 2 with -32600 itself, before the agent's
# handler runs; the check sends initialize(3) then initialize(1) on one connection (docs/interop.md, finding I1).
KNOWN_FAILURES = {"version-negotiation": "schema:ErrorCode(-32022): requested 1: an agent without a version <= 1"}


def test_conformance_against_the_sdk_agent(node: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.runner", "--agent", "node tests/interop/ts_agent.mjs", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr  # exactly because of the known failure below
    report = json.loads(proc.stdout)
    results = {check["id"]: check for check in report["checks"]}
    failed = {cid: c["message"] for cid, c in results.items() if c["result"] == "fail"}
    assert set(failed) == set(KNOWN_FAILURES), failed
    for cid, prefix in KNOWN_FAILURES.items():
        assert failed[cid].startswith(prefix), failed[cid]
    assert "got -32600" in failed["version-negotiation"]
    not_applicable = {cid for cid, c in results.items() if c["result"] == "n/a"}
    assert not_applicable == REFERENCE_ONLY | {"auth-methods"}
    passed = {cid for cid, c in results.items() if c["result"] == "pass"}
    assert len(passed) == 18
    assert passed == set(results) - not_applicable - set(KNOWN_FAILURES)
    assert results["initialize"]["message"] == "agent acp-interop-ts-agent 1.0.0"

    # docs/interop.md records the same results, check by check, in the runner's order.
    doc = (ROOT / "docs" / "interop.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z-]+)` \| (pass|fail|n/a) \|", doc, flags=re.MULTILINE)
    assert rows == [(check["id"], check["result"]) for check in report["checks"]]
