"""Client mode (``acp-conformance client -- ...``) on real subprocesses: acp-session's CLI through its driver
passes on both protocol versions, and each defect of the deliberately broken client fails exactly its check."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import jsonschema
import pytest

from acp_conformance.client_mode.cli import SCENARIOS, run_client
from acp_conformance.client_mode.judge import CLIENT_CHECKS

from .broken_client import DEFECTS
from .doc_tables import results_table

ROOT = Path(__file__).resolve().parents[2]
BROKEN = [sys.executable, str(ROOT / "tests" / "conformance" / "broken_client.py")]
CLI_DRIVER = [sys.executable, "-m", "acp_conformance.client_mode.drivers.acp_session_cli"]
SCHEMA = json.loads(
    (ROOT / "conformance" / "acp_conformance" / "client_mode" / "report.schema.json").read_text(encoding="utf-8")
)


def _client_run(client: list[str], *options: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-m", "acp_conformance.runner", "client", "--json", *options, "--", *client],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    report = json.loads(proc.stdout)
    jsonschema.validate(report, SCHEMA)  # every client report these tests see is held to the documented schema
    return proc.returncode, report


def _failed(report: dict[str, Any]) -> set[str]:
    return {c["id"] for c in report["checks"] if c["status"] == "FAIL"}


def test_acp_session_cli_passes_client_mode_on_both_versions_fast() -> None:
    code, report = _client_run(CLI_DRIVER)
    assert code == 0 and report["verdict"]["verdict"] == "conformant", report["verdict"]
    # The CLI closes the session it opened before it leaves (client-closes-sessions, ADVISORY, passes too).
    assert _failed(report) == set()
    assert {(r["scenario"], r["agentVersion"]) for r in report["runs"]} >= {("basic", 1), ("basic", 2)}
    assert {r["negotiated"] for r in report["runs"] if r["scenario"] == "basic"} == {1, 2}
    assert all(c["status"] == "PASS" for c in report["checks"] if c["tier"] == "MANDATORY")
    assert report["seconds"] < 10, report["seconds"]


def test_the_broken_client_without_a_defect_passes_everything(tmp_path: Path) -> None:
    junit_file = tmp_path / "junit.xml"
    code, report = _client_run(BROKEN, "--jobs", "6", "--junit", str(junit_file))
    assert code == 0 and _failed(report) == set(), report["checks"]
    suite = ElementTree.parse(junit_file).getroot()
    assert suite.get("tests") == str(len(CLIENT_CHECKS)) and suite.get("failures") == "0"


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_each_defect_fails_exactly_its_check(defect: str) -> None:
    code, report = _client_run([*BROKEN, "--defect", defect], "--jobs", "6", "--timeout", "5")
    assert _failed(report) == {DEFECTS[defect]}
    failed = next(c for c in report["checks"] if c["status"] == "FAIL")
    assert failed["transcript"] is not None and failed["stderrTail"] is not None
    tier = next(c.tier.value for c in CLIENT_CHECKS if c.id == DEFECTS[defect])
    assert code == (1 if tier in ("MANDATORY", "CAPABILITY") else 0)


def test_client_mode_baseline_known_and_stale(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"expectedFailures": {"client-meta": "rejects _meta; being fixed"}}))
    code, report = _client_run([*BROKEN, "--defect", "rejects-meta"], "--jobs", "6", "--baseline", str(baseline))
    assert code == 0 and report["verdict"]["baseline"]["known"] == ["client-meta"]
    code, report = _client_run(BROKEN, "--jobs", "6", "--baseline", str(baseline))
    assert code == 1 and report["verdict"]["baseline"]["stale"] == ["client-meta"]


LIBRARY_DRIVER = [sys.executable, "-m", "acp_conformance.client_mode.drivers.acp_session_library"]
PY_SDK_DRIVER = [sys.executable, str(ROOT / "tests" / "conformance" / "py_sdk_client_driver.py")]
TS_DRIVER = str(ROOT / "tests" / "interop" / "client_mode_driver.mjs")


def test_acp_session_library_passes_every_check() -> None:
    code, report = _client_run(LIBRARY_DRIVER)
    assert code == 0 and _failed(report) == set(), report["checks"]
    assert all(c["status"] == "PASS" for c in report["checks"]), report["checks"]


def _messages(report: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["message"] for c in report["checks"] if c["status"] == "FAIL"}


def test_official_python_sdk_client_findings() -> None:
    """The Python SDK 0.12.1 client (v1) with a thin driver: the findings docs/conformance.md lists."""
    code, report = _client_run(PY_SDK_DRIVER, "--timeout", "20")
    assert code == 1
    failed = _messages(report)
    assert set(failed) == {
        "client-schema",
        "client-no-approval-after-cancel",
        "client-cancels-pending-permission",
        "client-gates-capabilities",
    }, failed
    # An unimplemented terminal/create is answered with a null result (fs/* get -32601).
    assert "the answer to terminal/create: Object missing required field `terminalId`" in failed["client-schema"]
    assert '"id": "agent-3", "result": null' in failed["client-gates-capabilities"]
    # The SDK passes a permission request after session/cancel to the app, whose approval goes out.
    assert '"outcome":"selected"' in failed["client-no-approval-after-cancel"]
    # A request still pending at session/cancel is left unanswered (the app's handler still waits).
    assert "the pending permission request was never answered" in failed["client-cancels-pending-permission"]
    # It offers 1, also to the agent that speaks 2 (in permission-policy the driver starts nothing: exit 77).
    assert {r["negotiated"] for r in report["runs"] if r["scenario"] != "permission-policy"} == {1}
    assert {r["exitCode"] for r in report["runs"] if r["scenario"] == "permission-policy"} == {77}


def test_official_typescript_sdk_v2_client_findings(node: str) -> None:
    """The TypeScript SDK 2.4.0 v2 client() with a thin driver: the findings docs/conformance.md lists."""
    code, report = _client_run([node, TS_DRIVER], "--timeout", "10")
    assert code == 1
    failed = _messages(report)
    assert set(failed) == {"client-negotiation", "client-no-approval-after-cancel"}, failed
    # A v1 answer to initialize is not taken: the v2 client() rejects it (its schema wants `info`).
    assert "offered v2, the agent answered v1, and the client did not go on to prompt" in failed["client-negotiation"]
    tail = [line for c in report["checks"] if c["id"] == "client-negotiation" for line in c["stderrTail"] or []]
    text = "\n".join(tail)  # the SDK's schema error: `info` (v2's required field) missing
    assert '"info"' in text and "expected object, received undefined" in text, tail
    assert failed["client-no-approval-after-cancel"].startswith("cancel (agent v2): approved a permission")
    # At v2 it does the rest: every other check passes, except the v1-only one, which is not tested.
    statuses = {c["id"]: c["status"] for c in report["checks"] if c["id"] not in failed}
    assert {k for k, v in statuses.items() if v != "PASS"} == {"client-gates-capabilities", "client-permission-policy"}
    assert statuses["client-gates-capabilities"] == "NOT_TESTED"
    # The SDK leaves permission requests to the app and has no policy to apply: its driver says so (exit 77).
    assert statuses["client-permission-policy"] == "SKIPPED"
    assert statuses["client-offer-shape"] == "PASS"  # a v2 offer in v2's shape alone


def test_acp_session_conformance_client_is_client_mode() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "acp_session",
            "conformance",
            "client",
            "--json",
            "--scenario",
            "basic",
            "--",
            *LIBRARY_DRIVER,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["mode"] == "client"
    assert [(r["scenario"], r["agentVersion"]) for r in report["runs"]] == [("basic", 1), ("basic", 2)]


def test_a_client_that_never_starts_the_agent_is_not_conformant() -> None:
    code, report = _client_run(["true"])
    assert code == 1
    statuses = {c["id"]: c["status"] for c in report["checks"]}
    assert statuses["client-schema"] == statuses["client-negotiation"] == "NOT_TESTED"
    assert "never started the scripted agent" in next(
        c["message"] for c in report["checks"] if c["id"] == "client-schema"
    )
    assert statuses["client-prompt-turn"] == "FAIL"
    assert {"client-schema", "client-negotiation", "client-prompt-turn"} <= set(report["verdict"]["deciding"])


@pytest.mark.anyio
async def test_run_client_in_process(tmp_path: Path) -> None:
    """The library entry point (both event loops): runs, logs kept, and the judgement of a known defect."""
    report = await run_client(
        [*BROKEN, "--defect", "approve-after-cancel"], scenarios=["basic", "cancel"], keep_logs=str(tmp_path)
    )
    assert [(r.scenario, r.version, r.exit_code) for r in report.runs] == [
        ("basic", 1, 0),
        ("basic", 2, 0),
        ("cancel", 1, 0),
        ("cancel", 2, 0),
    ]
    statuses = {check.id: status for check, status, _ in report.results}
    assert statuses["client-no-approval-after-cancel"] == "fail" and statuses["client-prompt-turn"] == "pass"
    assert statuses["client-early-update"] == "n/a"  # its scenario was not selected
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "basic-v1.log",
        "basic-v2.log",
        "cancel-v1.log",
        "cancel-v2.log",
    ]


def test_docs_list_every_client_check_and_scenario() -> None:
    columns, rows = results_table("### Client checks")
    assert list(rows) == [c.id for c in CLIENT_CHECKS]
    for c in CLIENT_CHECKS:
        cells = dict(zip(columns, rows[c.id], strict=True))
        assert cells["tier"] == c.tier.value, c.id
        assert cells["rules"] == ", ".join(c.rules), c.id
    columns, rows = results_table("### Scenarios")
    assert list(rows) == list(SCENARIOS)
    for name, (versions, _) in SCENARIOS.items():
        assert rows[name][columns.index("versions")] == ", ".join(map(str, versions)), name
