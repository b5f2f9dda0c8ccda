"""Running the ``acp-session`` CLI in tests: its console script from this venv, state kept in a temp dir."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
CLI = str(BIN / "acp-session")
REPO = Path(__file__).resolve().parents[2]


PROMPT = "\x1b[?2004h"
"""What the interactive prompt (prompt_toolkit) writes when it is ready for input: bracketed paste switched on."""


def cli_env(state: Path, *, color: bool = False) -> dict[str, str]:
    """The default reference agent keeps its sessions under ``state``; no colour unless asked for. A pseudo-
    terminal in a test does not answer cursor position requests, so prompt_toolkit is told not to send them."""
    env = {k: v for k, v in os.environ.items() if k not in ("ACP_REFERENCE_AGENT_STORE", "NO_COLOR")}
    env["XDG_STATE_HOME"] = str(state)
    env["TERM"] = "xterm"
    env["PROMPT_TOOLKIT_NO_CPR"] = "1"
    if not color:
        env["NO_COLOR"] = "1"
    return env


def run_cli(state: Path, *args: str, stdin: str = "", timeout: float = 30) -> subprocess.CompletedProcess[str]:
    if not os.path.exists(CLI):
        pytest.skip("the acp-session console script is not installed (pip install -e .)")
    return subprocess.run(
        [CLI, *args], input=stdin, capture_output=True, text=True, env=cli_env(state), timeout=timeout, cwd=state
    )


_MEASURED = (
    "import resource, subprocess, sys\n"
    "code = subprocess.call(sys.argv[1:])\n"
    "sys.stderr.write(f'\\npeak-rss-kib {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\\n')\n"
    "sys.exit(code)\n"
)


def run_cli_measured(state: Path, *args: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess[str], int]:
    """``run_cli``, and the CLI process's peak RSS in bytes. A small launcher starts the CLI and reads its
    children's ``ru_maxrss``: read from pytest instead it would include pytest's own (on Linux a child's peak
    starts at its forking parent's)."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, CLI, *args],
        capture_output=True,
        text=True,
        env=cli_env(state),
        timeout=timeout,
        cwd=state,
    )
    stderr, _, tail = done.stderr.rpartition("\npeak-rss-kib ")
    done.stderr = stderr
    return done, int(tail) * 1024
