"""``--reconnect N``: the CLI's agent killed mid-turn is restarted and the session resumed; the CLI prints one dim
line per attempt and goes on, and ``--json`` gives ``reconnecting`` / ``reconnected`` records (schema-checked)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.cli.support import CLI, cli_env
from tests.cli.test_json_records import records_of

PID_AGENT = textwrap.dedent(
    """
    import os, runpy, sys
    with open(sys.argv.pop(1), "a") as pids:
        pids.write(f"{os.getpid()}\\n")
    sys.argv[0] = "acp-reference-agent"
    runpy.run_module("acp_conformance.agent", run_name="__main__")
    """
)


def agent_command(tmp_path: Path) -> tuple[str, Path]:
    script = tmp_path / "pid_agent.py"
    script.write_text(PID_AGENT)
    pids = tmp_path / "pids"
    store = tmp_path / "store.json"
    return shlex.join([sys.executable, str(script), str(pids), "--store", str(store)]), pids


def run_killing_the_agent(tmp_path: Path, *args: str, restarts: int = 1) -> tuple[list[str], str, int]:
    """Run ``acp-session chat ... "/slow 40"`` and SIGKILL the agent once the reply's second chunk is out
    (stdout lines, stderr, exit code); ``restarts``: how many times the agent must have been started again."""
    command, pids = agent_command(tmp_path)
    process = subprocess.Popen(
        [CLI, "chat", "--agent", command, "--cwd", str(tmp_path), *args, "/slow 40"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(tmp_path),
        cwd=tmp_path,
    )
    assert process.stdout is not None
    out = b""
    killed = False
    deadline = time.monotonic() + 60
    while chunk := os.read(process.stdout.fileno(), 4096):  # text output has no newline between chunks
        out += chunk
        if not killed and b"chunk 2." in out:
            os.kill(int(pids.read_text().split()[0]), signal.SIGKILL)
            killed = True
        assert time.monotonic() < deadline
    _, err = process.communicate(timeout=60)
    assert killed
    assert len(pids.read_text().split()) == 1 + restarts  # started again with the same command, or not
    return out.decode().splitlines(keepends=True), err, process.returncode


def test_text_output_says_reconnecting_once_and_goes_on(tmp_path: Path) -> None:
    lines, err, code = run_killing_the_agent(tmp_path, "--reconnect", "3")
    assert err.count("connection lost, reconnecting (1/3)...") == 1
    assert "lost this turn's work" in "".join(lines) + err  # the killed process had not saved the turn
    assert code != 0


def test_json_records_of_a_reconnect_match_the_schema(tmp_path: Path) -> None:
    lines, _, _ = run_killing_the_agent(tmp_path, "--reconnect", "3", "--json")
    records = records_of("".join(lines))
    events = [r["event"] for r in records]
    assert "reconnecting" in events and "reconnected" in events
    reconnecting = next(r for r in records if r["event"] == "reconnecting")
    assert reconnecting["attempt"] == 1 and reconnecting["attempts"] == 3
    assert records[-1]["event"] == "error" and records[-1]["error_type"] == "TurnLost"
    # Everything shown came once: the text before the kill, nothing repeated after it.
    texts = [r["text"] for r in records if r["event"] == "text"]
    assert len(texts) == len(set(texts))


def test_without_reconnect_the_cli_reports_the_agent_gone(tmp_path: Path) -> None:
    lines, err, code = run_killing_the_agent(tmp_path, "--json", restarts=0)
    assert "reconnecting" not in err
    assert json.loads(lines[-1])["event"] == "error"
    assert code != 0
