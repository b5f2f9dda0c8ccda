"""The reaper is transparent to the command it runs: streams, environment, cwd, exit code, start errors and
signals are what they would be without it (``acp_session/transport/reaper.py``, Linux)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from acp_session.transport.process_tree import ReapedTree, open_tree, reaper_available

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(not reaper_available(), reason="the reaper is Linux only")]

REPORT = (  # the environment from /proc: this command's own Python would add LC_CTYPE to os.environ itself
    "import json, os, sys; data = sys.stdin.read(); sys.stderr.write('to stderr'); "
    "env = dict(e.split('=', 1) for e in open('/proc/self/environ').read().split('\\0') if e); "
    "print(json.dumps({'stdin': data, 'env': env, 'cwd': os.getcwd(), 'pgid': os.getpgrp(), "
    "})); sys.exit(7)"
)


async def run(argv: list[str], stdin: bytes = b"", **options: object) -> tuple[ReapedTree, bytes, bytes]:
    tree = await open_tree(
        argv,
        reap=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **options,  # type: ignore[arg-type]
    )
    assert isinstance(tree, ReapedTree)
    process = tree.process
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    await process.stdin.send(stdin)
    await process.stdin.aclose()
    out, err = bytearray(), bytearray()
    with anyio.fail_after(10):
        async for chunk in process.stdout:
            out += chunk
        async for chunk in process.stderr:
            err += chunk
        await tree.wait_all()
    tree.close()
    return tree, bytes(out), bytes(err)


async def test_streams_environment_cwd_and_exit_code_pass_through(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", os.defpath), "ONLY_THIS": "1", "LANG": "C"}  # a C locale: no coercion
    tree, out, err = await run([sys.executable, "-c", REPORT], b"hello\n", env=env, cwd=str(tmp_path))
    seen = json.loads(out)
    assert seen["stdin"] == "hello\n" and err == b"to stderr"
    assert seen["env"] == env  # exactly what was passed: Python's LC_CTYPE coercion in the reaper does not leak
    assert seen["cwd"] == str(tmp_path)
    assert seen["pgid"] == tree.pid == tree.pgid  # the command leads a process group of its own
    assert tree.returncode == 7
    assert tree.process.returncode == 7  # the reaper exits with the command's code too


async def test_the_command_does_not_inherit_pythons_ignored_signals() -> None:
    # Python ignores SIGPIPE and SIGXFSZ; subprocess restores them for a command, and so does the reaper.
    _, out, _ = await run(["cat", "/proc/self/status"])
    ignored = int(next(line for line in out.decode().splitlines() if line.startswith("SigIgn:")).split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1)) and not ignored & (1 << (signal.SIGXFSZ - 1))


async def test_a_command_killed_by_a_signal_reports_it() -> None:
    tree, _, _ = await run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"])
    assert tree.returncode == -signal.SIGTERM


@pytest.mark.parametrize(("command", "error"), [("no-such-command-xyz", FileNotFoundError), ("/", PermissionError)])
async def test_a_command_that_cannot_start_raises_as_without_the_reaper(command: str, error: type[OSError]) -> None:
    with pytest.raises(error) as info:
        await open_tree([command], reap=True, stdin=None, stdout=None, stderr=None)
    assert info.value.filename == command


async def test_signals_sent_to_the_reaper_reach_the_command() -> None:
    code = (
        "import signal, sys, time; signal.signal(signal.SIGUSR1, lambda *a: sys.exit(42)); "
        "print('ready', flush=True); time.sleep(30)"
    )
    tree = await open_tree([sys.executable, "-c", code], reap=True, stdin=None, stdout=subprocess.PIPE, stderr=None)
    assert isinstance(tree, ReapedTree) and tree.process.stdout is not None
    with anyio.fail_after(10):
        assert (await tree.process.stdout.receive()).strip() == b"ready"
        tree.process.send_signal(signal.SIGUSR1)
        assert await tree.wait() == 42
        await tree.wait_all()
    await tree.process.stdout.aclose()
    tree.close()


async def test_killing_the_reaper_outright_kills_the_command() -> None:
    tree = await open_tree(["sleep", "30"], reap=True, stdin=None, stdout=None, stderr=None)
    assert isinstance(tree, ReapedTree)
    tree.process.kill()
    with anyio.fail_after(5):
        await tree.wait_all()  # parent-death signal: the command does not run on as an orphan
    assert tree.returncode == -signal.SIGKILL
    tree.close()


async def test_the_exit_code_is_seen_without_awaiting_it() -> None:
    # As a subprocess's returncode: callers poll it (the conformance runner does, after a failed initialize).
    tree = await open_tree(["sh", "-c", "exit 3"], reap=True, stdin=None, stdout=None, stderr=None)
    assert isinstance(tree, ReapedTree)
    with anyio.fail_after(5):
        while tree.returncode is None:
            await anyio.sleep(0.01)
    assert tree.returncode == 3
    with anyio.fail_after(5):
        while tree.running():
            await anyio.sleep(0.01)
        await tree.wait_all()
    tree.close()
