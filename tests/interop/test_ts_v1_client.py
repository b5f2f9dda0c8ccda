"""The official TypeScript SDK 0.17.0 (protocol v1) as a client of the reference agent: its schema checks every
message of whole v1 turns (text, a permission, a file edit through the client's fs methods, a plan), set_mode
and session/load (tests/interop/ts_v1_client.mjs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLIENT = HERE / "ts_v1_client.mjs"


def test_the_v1_typescript_sdk_client_drives_the_reference_agent(node: str, tmp_path: Path) -> None:
    agent = [sys.executable, "-m", "acp_conformance.agent"]
    proc = subprocess.run(
        [node, str(CLIENT), "--", *agent], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["protocolVersion"] == 1 and summary["agentInfo"]["name"] == "acp-reference-agent"
    assert summary["modes"]["currentModeId"] == "code" and summary["loadedMode"] == "ask"
    turns = {t["prompt"]: t for t in summary["turns"]}
    assert {t["stopReason"] for t in turns.values()} == {"end_turn"}
    assert turns["hello"]["text"].startswith("Hello! I am the ACP reference agent.")
    assert turns["/permission"]["text"] == "Done: build/ was removed."  # allow-once was selected
    assert summary["permissions"] == [{"title": "Run `rm -rf build/`?", "options": ["allow-once", "reject-once"]}]
    assert turns["/tool"]["text"] == "I changed one line in example.txt."
    example = str(tmp_path / "example.txt")
    assert summary["fsCalls"] == [
        {"method": "fs/read_text_file", "path": example},
        {"method": "fs/write_text_file", "path": example, "content": "new\n"},
    ]
    assert not (tmp_path / "example.txt").exists()  # written through the client (kept in its memory)
    assert turns["/tool"]["updates"][0] == "tool_call" and "plan" in turns["/plan"]["updates"]
    # session/load replays the four turns, each starting with the user's prompt.
    assert summary["loadReplay"].count("user_message_chunk") == 4
