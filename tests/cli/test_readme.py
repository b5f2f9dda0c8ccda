"""The README's main-job command, exactly as written there, runs the CLI against the reference agent."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from tests.cli.support import REPO, cli_env


def main_job_command() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Two commands", 1)[1]
    blocks = re.findall(r"```sh\n(.*?)\n```", section, flags=re.S)
    assert len(blocks) >= 2, "README: the two commands are sh code blocks"
    return str(blocks[0].strip())


def test_readme_main_job_command_runs_the_cli(tmp_path: Path) -> None:
    command = main_job_command()
    assert command == (
        "python3 -m venv .venv && .venv/bin/pip install -q -e '.[cli]' && .venv/bin/acp-session chat \"hello\""
    ), "the README's main-job command changed: update this test's expectation"
    # In a copy of the package: in place, its `pip install` would reinstall the package into the venv that the
    # suite's other (parallel) workers run from. The reference agent's store goes to tmp_path.
    copy = tmp_path / "checkout"
    for name in ("acp_session", "conformance"):
        shutil.copytree(REPO / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, copy / name)
    result = subprocess.run(
        command, shell=True, cwd=copy, env=cli_env(tmp_path), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines()[-2:] == [
        "Hello! I am the ACP reference agent. Type `/help` to see what I can demonstrate.",
        "[stop: end_turn]",
    ], result.stdout
