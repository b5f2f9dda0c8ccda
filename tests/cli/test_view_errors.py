"""``acp-session view``'s own failures in words: a line that is not a transcript's is named by its number and what
is wrong with it (never a bare ``'t'``); ``--open`` without a web browser says so and exits with 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cli.support import CLI, cli_env, run_cli


def test_a_broken_transcript_names_the_line_and_the_problem(tmp_path: Path) -> None:
    (tmp_path / "no-t.jsonl").write_text('{"t": 1, "dir": "out", "msg": {}}\n{"dir": "in", "msg": {}}\n')
    done = run_cli(tmp_path, "view", str(tmp_path / "no-t.jsonl"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().endswith(
        "is not a transcript (JSON lines with t, dir, msg): line 2: Object missing required field `t`"
    ), done.stderr
    (tmp_path / "text.jsonl").write_text('{"t": 1, "dir": "out", "msg": {}}\n\nnot json\n')
    done = run_cli(tmp_path, "view", str(tmp_path / "text.jsonl"))
    assert done.returncode == 1 and ": line 3: JSON is malformed" in done.stderr
    assert not (tmp_path / "text.jsonl.html").exists()


def test_open_without_a_browser_says_so(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"t": 1, "dir": "out", "msg": {"jsonrpc": "2.0", "id": 1, "method": "initialize"}}\n')
    env = {k: v for k, v in cli_env(tmp_path).items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
    env["PATH"] = os.path.dirname(sys.executable)  # no browser of any kind to be found
    done = subprocess.run(
        [CLI, "view", str(transcript), "--open"], capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.strip() == f"{transcript}.html"  # the page is there all the same
    assert f"found no web browser to open {transcript}.html" in done.stderr
