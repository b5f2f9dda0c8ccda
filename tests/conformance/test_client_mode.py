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
from .packing import first_fit

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
    # Fast: no run waited for the runner's limit (15 s), a wall-clock bound that parallel workers cannot break.
    assert all(r["exitCode"] is not None for r in report["runs"]), report["runs"]
    assert report["seconds"] < 60, report["seconds"]


def test_the_broken_client_without_a_defect_passes_everything(tmp_path: Path) -> None:
    junit_file = tmp_path / "junit.xml"
    code, report = _client_run(BROKEN, "--jobs", "6", "--junit", str(junit_file))
    assert code == 0 and _failed(report) == set(), report["checks"]
    suite = ElementTree.parse(junit_file).getroot()
    assert suite.get("tests") == str(len(CLIENT_CHECKS)) and suite.get("failures") == "0"


ALONE = {"no-initialize"}
"""Defects that change every run (no handshake at all), played alone."""


def _exit_code(defects: list[str]) -> int:
    """1 when one of the defects fails a check that decides the verdict, else 0 (advisory findings only)."""
    tiers = {c.tier.value for c in CLIENT_CHECKS if c.id in {DEFECTS[d] for d in defects}}
    return 1 if tiers & {"MANDATORY", "CAPABILITY"} else 0


def _defect_groups() -> list[list[str]]:
    """The defects packed into client runs (as tests/conformance/test_v1_mutants.py packs the agent's modes): a
    defect joins the first group whose defects fail none of its check and decide the exit code as it does, so a
    group's run must fail exactly the union of its defects' checks and exit as each of them alone would."""

    def joins(group: list[str], defect: str) -> bool:
        clash = any(DEFECTS[other] == DEFECTS[defect] or other in ALONE for other in group)
        return defect not in ALONE and not clash and _exit_code(group) == _exit_code([defect])

    return first_fit(sorted(DEFECTS), joins)


DEFECT_GROUPS = _defect_groups()


@pytest.fixture(scope="module")
def defect_runs() -> dict[str, tuple[list[str], int, dict[str, Any]]]:
    """defect -> (its group, the group's exit code, the group's report); each group's run made once, when the
    first of its defects is tested."""
    return {}


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_each_defect_fails_exactly_its_check(
    defect: str, defect_runs: dict[str, tuple[list[str], int, dict[str, Any]]]
) -> None:
    if defect not in defect_runs:
        group = next(g for g in DEFECT_GROUPS if defect in g)
        code, report = _client_run([*BROKEN, "--defect", ",".join(group)], "--jobs", "6", "--timeout", "5")
        defect_runs.update(dict.fromkeys(group, (group, code, report)))
    group, code, report = defect_runs[defect]
    assert _failed(report) == {DEFECTS[d] for d in group}, (group, report["checks"])
    failed = next(c for c in report["checks"] if c["id"] == DEFECTS[defect])
    assert failed["status"] == "FAIL" and failed["transcript"] is not None and failed["stderrTail"] is not None
    assert code == _exit_code([defect])


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
    assert proc.returncode == 4 and report["mode"] == "client"  # one scenario: a partial verdict
    assert [(r["scenario"], r["agentVersion"]) for r in report["runs"]] == [("basic", 1), ("basic", 2)]


def test_a_client_that_never_starts_the_agent_is_not_checked() -> None:
    """As an agent that does not start: "not checked", exit 3, every check NOT_TESTED with the reason; no PASS
    (nothing it did was wrong because it did nothing) and no FAIL of a turn it never began."""
    code, report = _client_run(["true"])
    assert code == 3
    assert report["problem"].startswith("the client never started the scripted agent")
    assert {c["status"] for c in report["checks"]} == {"NOT_TESTED"}
    assert all(c["message"] == f"not run: {report['problem']}" for c in report["checks"])
    assert report["verdict"]["verdict"] == "non_conformant" and report["verdict"]["conformant"] is False


CLIENT_MODE = [sys.executable, "-m", "acp_conformance.runner", "client"]
WRONG_DRIVER = [sys.executable, "-m", "acp_session", "chat", "--agent"]


def test_a_wrong_driver_that_never_connects_is_not_checked() -> None:
    """acp-session's chat given the scripted agent's command as its --agent value and prompt: a usage error in
    every run, never a connection. The report says so, with the client's own words."""
    proc = subprocess.run(
        [*CLIENT_MODE, "--scenario", "basic", "--scenario", "permission", "--", *WRONG_DRIVER],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "NOT CHECKED: the client never started the scripted agent" in proc.stdout
    assert "acp-session chat: error: unrecognized arguments" in proc.stdout
    assert " PASS " not in proc.stdout and "VERDICT: NON_CONFORMANT" in proc.stdout


def test_a_client_that_talks_but_never_initializes_fails_negotiation() -> None:
    """It spoke, so it is judged: what it sent is wrong (exit 1), unlike a client that never spoke (exit 3)."""
    code, report = _client_run([*BROKEN, "--defect", "no-initialize"], "--scenario", "basic", "--timeout", "5")
    statuses = {c["id"]: c["status"] for c in report["checks"]}
    assert code == 1 and report["problem"].startswith("the client sent the scripted agent no initialize")
    assert statuses.pop("client-negotiation") == "FAIL"
    assert set(statuses.values()) == {"NOT_TESTED"}, statuses


def test_a_client_advertising_every_capability_leaves_nothing_gated() -> None:
    """client-gates-capabilities passes only when a call of a method the client did not advertise was refused;
    a client that advertises fs and terminal is NOT_TESTED (never a PASS that observed nothing)."""
    scenario = ("--scenario", "basic", "--scenario", "client-methods", "--protocol", "1")
    code, report = _client_run([*LIBRARY_DRIVER, "--providers"], *scenario)  # every provider: all advertised
    gates = next(c for c in report["checks"] if c["id"] == "client-gates-capabilities")
    assert gates["status"] == "NOT_TESTED", gates
    assert "advertised fs.readTextFile, fs.writeTextFile and terminal" in gates["message"]
    assert code == 4  # CAPABILITY: not tested does not decide; two scenarios, one version: partial
    code, report = _client_run(LIBRARY_DRIVER, *scenario)  # no provider: nothing advertised, every call refused
    assert next(c for c in report["checks"] if c["id"] == "client-gates-capabilities")["status"] == "PASS"


def test_client_help_names_the_shipped_drivers() -> None:
    from acp_conformance.client_mode import drivers

    shipped = {p.stem for p in Path(drivers.__file__).parent.glob("*.py") if p.stem != "__init__"}
    assert set(drivers.DRIVERS) == shipped
    proc = subprocess.run(
        [sys.executable, "-m", "acp_conformance.runner", "client", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0
    for name in shipped:
        assert f"python -m acp_conformance.client_mode.drivers.{name}\n" in proc.stdout, name


def test_a_run_of_some_scenarios_is_partial_and_names_the_runs_left_out() -> None:
    code, report = _client_run(LIBRARY_DRIVER, "--scenario", "basic", "--protocol", "2")
    verdict = report["verdict"]
    assert code == 4 and verdict["verdict"] == "partial" and verdict["conformant"] is None
    assert verdict["runs_played"] == 1 and verdict["runs_total"] == sum(len(vs) for vs, _ in SCENARIOS.values())
    assert "basic/v1" in verdict["not_run"] and "basic/v2" not in verdict["not_run"]
    assert verdict["selection"] == "--scenario basic --protocol 2"


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
