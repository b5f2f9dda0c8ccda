"""A client written with the official TypeScript SDK's v2 ``client()`` app drives our reference agent over stdio."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .conftest import TS_CLIENT

REFERENCE_AGENT = [sys.executable, "-m", "acp_conformance.agent"]
ROOT = Path(__file__).resolve().parents[2]
STEPS = [
    "initialize",
    "session/new",
    "prompt",
    "streaming thoughts and text",
    "streaming a tool call",
    "permission allowed",
    "permission rejected",
    "cancel with a pending permission request",
    "cancel a streaming turn",
    "held prompts",
    "session/cancel withdraws held prompts",
    "config options",
    "close",
]


def _run(node: str, tmp_path: Path, *options: str, agent: list[str] = REFERENCE_AGENT) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [node, str(TS_CLIENT), "--cwd", str(tmp_path), *options, "--", *agent],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout.strip(), f"no summary from the TS client (exit {proc.returncode}):\n{proc.stderr}"
    return proc.returncode, json.loads(proc.stdout)


def test_sdk_client_drives_the_reference_agent(node: str, tmp_path: Path) -> None:
    code, summary = _run(node, tmp_path)
    failed = {step["name"]: step["error"] for step in summary["steps"] if not step["ok"]}
    assert failed == {}, "\n\n".join(f"{name}: {error}" for name, error in failed.items())
    assert code == 0 and summary["ok"] is True
    assert [step["name"] for step in summary["steps"]] == STEPS
    assert summary["agent"]["name"] == "acp-reference-agent"


def test_sdk_client_reports_a_broken_agent(node: str, tmp_path: Path) -> None:
    # The harness itself must fail loudly: a prompt answered without messageId is rejected by the SDK.
    code, summary = _run(
        node,
        tmp_path,
        "--steps",
        "initialize,session/new,prompt",
        agent=[*REFERENCE_AGENT, "--broken", "no-message-id"],
    )
    assert code == 1 and summary["ok"] is False
    assert [(step["name"], step["ok"]) for step in summary["steps"]] == [
        ("initialize", True),
        ("session/new", True),
        ("prompt", False),
    ]
    assert "messageId" in summary["steps"][2]["error"]
