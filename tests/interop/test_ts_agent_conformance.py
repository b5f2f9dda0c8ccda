"""acp-conformance against the v2 agent written with the official TypeScript SDK 2.4.0 (``ts_agent.mjs``): one
finding (an ADVISORY failure: it answers a batch of notifications) and nothing else failing, with or without its
scenario file; with ``ts_agent.toml`` every check it has a behaviour for passes. The results are the ones
docs/conformance.md records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conformance.doc_tables import documented

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
AGENT = "node tests/interop/ts_agent.mjs"
V2_TABLE = "### Results: protocol v2 agents"

# Checks that need a scenario: not applicable without a file.
SCENARIO_CHECKS = {
    "permission-request",
    "permission-requires-action",
    "permission-custom-outcome",
    "permission-flow",
    "tool-call",
    "tool-call-ids",
    "tool-call-title",
    "open-enums",
    "plan",
    "plan-shape",
    "terminal",
    "terminal-output",
    "cancel-turn",
    "cancel-nothing-after",
    "cancel-not-error",
    "cancel-stop-reason",
    "cancel-unanswered",
    "cancel-with-meta",
    "cancel-permission",
    "held-prompt-cancel-request",
    "cancel-held-prompts",
    "close-active-work",
    "close-held-prompts",
    "scenario-stop-reasons",
    "background-work",
    "permission-refused",
    "permission-asked",
}
# ts_agent.mjs has no plan, terminal or background-work behaviour.
NO_BEHAVIOUR = {"plan", "plan-shape", "terminal", "terminal-output", "background-work"}
# What it does not offer or send: a login, additional directories, commands, image or audio prompts, batches (it refuses
# them whole, as the schema lets it), a config_option_update, any _meta.
NOT_OFFERED = {
    "auth-methods",
    "auth-method-ids",
    "auth-method-types",
    "terminal-auth-methods",
    "additional-directories",
    "resume-additional-directories",
    "available-commands",
    "prompt-image",
    "prompt-audio",
    "batch-requests",
    "batch-invalid-entries",
    "config-option-update",
    "meta-objects",
}
# Finding: it answers a batch of notifications only (-32600, id null), which gets no reply (ACP-BATCH-202).
FINDINGS = {"batch-notifications"}


def _run(*args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "acp_conformance.runner", "--agent", AGENT, "--json", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def test_conformance_against_the_sdk_agent(node: str) -> None:
    report = _run()
    assert report["checkSet"] == "v2" and report["agentInfo"] == {"name": "acp-interop-ts-agent", "version": "1.0.0"}
    results = {check["id"]: check for check in report["checks"]}
    failed = {cid: c["message"] for cid, c in results.items() if c["result"] in ("fail", "warn")}
    assert set(failed) == FINDINGS, failed
    assert failed["batch-notifications"].startswith("transports.mdx#batches: a batch of notifications was answered")
    assert {cid for cid, c in results.items() if c["result"] == "n/a"} == SCENARIO_CHECKS | NOT_OFFERED
    # Finding I1 (docs/interop.md): each version probe runs on a fresh agent process.
    assert results["version-too-old"]["message"] == "1 -> -32022"
    # The issue that started the audit: resume is checked on a session that is still open, which passes.
    assert results["resume"]["result"] == "pass"
    assert {cid: c["result"] for cid, c in results.items()} == documented(V2_TABLE, "TS SDK agent")


def test_scenario_file_turns_the_sdk_agents_not_applicable_checks_into_passes(node: str) -> None:
    report = _run("--scenarios", str(HERE / "ts_agent.toml"))
    results = {check["id"]: check for check in report["checks"]}
    assert {cid for cid, c in results.items() if c["result"] in ("fail", "warn")} == FINDINGS
    assert {cid for cid, c in results.items() if c["result"] == "n/a"} == NO_BEHAVIOUR | NOT_OFFERED
    for check_id in SCENARIO_CHECKS - NO_BEHAVIOUR:
        assert results[check_id]["result"] == "pass", check_id
        assert results[check_id]["scenarios"], check_id  # each says which prompt it used
    assert results["cancel-turn"]["scenarios"] == ["long_turn: '/slow 60'"]
    assert results["stop-reason"]["message"] == "end_turn"
    assert results["scenario-stop-reasons"]["message"] == "refusal, max_tokens, error"
    assert {cid: c["result"] for cid, c in results.items()} == documented(V2_TABLE, "TS SDK agent + scenarios")
