"""The command lines' own deadlines bound a remote agent's every step (issue 51): ``--init-timeout`` (``acp-session
chat|login --url``) and ``--timeout`` (``acp-conformance --url``) end a silent or dribbling ``initialize`` (or
WebSocket upgrade) in about that time on both profiles, not after the transport's 60 s or h11's day; ``login``
says what it waits for and gives up at ``--login-timeout``; 100 000 login methods make a short message.

The agent is ``tests/helpers/hostile_remote.py`` in a process of its own. Each command gets 40 s to end: far more
than the 5 s asked for plus a loaded machine's start-up, less than the 60 s the transport waited before."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli.support import BIN, REPO, cli_env, run_cli

ENDS_WITHIN = 40.0


@pytest.fixture(scope="module")
def hostile() -> Iterator[Callable[[str, str], str]]:
    """``hostile(mode, scheme)``: the URL of a hostile agent in that mode (tests/helpers/hostile_remote.py), one
    process per mode for the module (it treats every connection alike; each command opens its own)."""
    processes: list[subprocess.Popen[str]] = []
    urls: dict[str, str] = {}

    def start(mode: str, scheme: str) -> str:
        if mode in urls:
            return scheme + urls[mode].removeprefix("http")
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.helpers.hostile_remote", mode],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        processes.append(process)
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        urls[mode] = url
        return scheme + url.removeprefix("http")

    yield start
    for process in processes:
        process.kill()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


SLOW_STARTS = [("silent", "http"), ("dribble", "http"), ("silent", "ws"), ("dribble", "ws")]


@pytest.mark.parametrize(("mode", "scheme"), SLOW_STARTS)
def test_chat_init_timeout_ends_a_silent_or_dribbling_remote_start(
    hostile: Callable[[str, str], str], tmp_path: Path, mode: str, scheme: str
) -> None:
    url = hostile(mode, scheme)
    done = run_cli(tmp_path, "chat", "--url", url, "--init-timeout", "5", "hi", timeout=ENDS_WITHIN)
    assert done.returncode == 1, done.stderr
    if (mode, scheme) == ("dribble", "ws"):  # the upgrade itself never ends: --init-timeout bounds it too
        assert "the WebSocket upgrade" in done.stderr and "did not finish within 5 s" in done.stderr
    else:
        assert "did not answer initialize within 5 s (--init-timeout" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("mode", "scheme"), [("silent", "http"), ("dribble", "ws")])
def test_login_says_it_waits_for_a_remote_agent_and_gives_up_at_init_timeout(
    hostile: Callable[[str, str], str], tmp_path: Path, mode: str, scheme: str
) -> None:
    url = hostile(mode, scheme)
    done = run_cli(tmp_path, "login", "--url", url, "--init-timeout", "5", timeout=ENDS_WITHIN)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"acp-session: connecting to the agent at {url}; giving up after 5 s (--init-timeout)"
    assert "within 5 s" in lines[-1]


@pytest.mark.parametrize("scheme", ["http", "ws"])
def test_login_waits_for_a_silent_auth_login_with_a_visible_line_until_its_deadline(
    hostile: Callable[[str, str], str], tmp_path: Path, scheme: str
) -> None:
    url = hostile("silent-login", scheme)
    done = run_cli(tmp_path, "login", "--url", url, "--login-timeout", "3", timeout=ENDS_WITHIN)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[1:] == [
        "acp-session: waiting for the agent to finish the login (Log in with a browser); "
        "giving up after 3 s (--login-timeout)",
        "acp-session: the agent did not finish the login within 3 s (--login-timeout SECONDS to wait longer)",
    ]


def test_a_hundred_thousand_login_methods_make_a_short_message(
    hostile: Callable[[str, str], str], tmp_path: Path
) -> None:
    url = hostile("many-logins", "http")
    done = run_cli(tmp_path, "login", "--url", url, timeout=ENDS_WITHIN)
    assert done.returncode == 2, done.stderr[:2000]
    line = done.stderr.splitlines()[-1]
    assert line.startswith("acp-session: the agent offers several login methods, name one: login-0 (agent: ")
    assert line.endswith("login-9 (agent: Login number 9); and 99990 more")
    assert len(done.stderr) < 2048
    as_json = run_cli(tmp_path, "login", "--url", url, "--json", timeout=ENDS_WITHIN)
    assert as_json.returncode == 2 and len(as_json.stdout) < 2048


@pytest.mark.parametrize(("mode", "scheme"), [("silent", "http"), ("dribble", "ws")])
def test_conformance_timeout_ends_a_silent_or_dribbling_remote_start(
    hostile: Callable[[str, str], str], tmp_path: Path, mode: str, scheme: str
) -> None:
    url = hostile(mode, scheme)
    done = subprocess.run(
        [str(BIN / "acp-conformance"), "--url", url, "--timeout", "5"],
        capture_output=True,
        text=True,
        env=cli_env(tmp_path),
        timeout=ENDS_WITHIN,
        cwd=tmp_path,
    )
    assert done.returncode == 3, done.stdout + done.stderr  # not started: nothing could be checked
    problem = next(line for line in done.stdout.splitlines() if line.startswith("NOT CHECKED: "))
    if scheme == "ws":
        assert problem.endswith("the WebSocket upgrade at " + url + " did not finish within 5 s")
    else:
        assert problem == "NOT CHECKED: the agent did not answer initialize within 5s"
