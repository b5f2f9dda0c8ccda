"""``--url`` where the ``remote`` extra is not installed (here: an ``httpx`` that cannot be imported, put first on
the path) says what to install, as this install's problem, never as "the agent failed"."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.support import CLI, cli_env


def test_a_missing_remote_extra_says_what_to_install(tmp_path: Path) -> None:
    shim = tmp_path / "shim" / "httpx"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError(\"No module named 'httpx'\")\n")
    env = cli_env(tmp_path)
    env["PYTHONPATH"] = str(tmp_path / "shim")
    done = subprocess.run(
        [CLI, "chat", "--url", "http://127.0.0.1:9/acp", "hi"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("acp-session: remote agents need the 'remote' extra (httpx is not installed): ")
    assert "pip install 'acp-session[remote]'" in done.stderr and "the agent failed" not in done.stderr
