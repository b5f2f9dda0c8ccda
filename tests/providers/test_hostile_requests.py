"""Provider requests from a hostile v1 agent over real pipes (issue 26, items 7, 9 and 10).

The agent (``agents/v1_provider_agent.py``) sends ``fs/*`` and ``terminal/*`` requests that probe the
providers' edges; each test reads back exactly what the client answered on the wire.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from acp_session import ClientBuilder

from .agent_support import agent_argv, answers, run_steps

pytestmark = pytest.mark.anyio

NOBODY = 65534


@pytest.mark.xfail(
    sys.version_info >= (3, 13),
    reason="from Python 3.13 os.path.realpath no longer raises for a link it cannot read: the path is refused as "
    "outside the session's directories (still -32602), not as unresolvable",
    strict=True,
)
async def test_a_path_that_cannot_be_resolved_is_invalid_params_with_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # /proc/PID/exe of a zombie is a symlink that cannot be read: os.path.realpath raises (ENOENT) as it does
    # for a symlink swapped mid-check (EINVAL). Both are the agent's doing: -32602, one line, no traceback.
    log = tmp_path / "agent.log"
    caplog.set_level(logging.DEBUG)
    steps = [
        {"zombie": True},
        {"call": "fs/read_text_file", "params": {"sessionId": "s1", "path": "/proc/$zombie/exe"}},
        {"call": "terminal/create", "params": {"sessionId": "s1", "command": "true", "cwd": "/proc/$zombie/exe"}},
    ]
    builder = ClientBuilder("hostile", "1").with_file_system().with_terminals()
    async with builder.spawn(agent_argv(log)) as client:
        session = await client.new_session(str(tmp_path))
        caplog.clear()
        await run_steps(session, steps)
    read, create = answers(log)
    for answer, field in ((read, "path"), (create, "cwd")):
        assert answer["error"]["code"] == -32602, answer
        assert "could not be resolved" in answer["error"]["message"]
        assert answer["error"]["data"][field].endswith("/exe")
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR or record.exc_info]
    refusals = [record for record in caplog.records if "could not be resolved" in record.getMessage()]
    assert len(refusals) == 2 and all(record.levelno == logging.WARNING for record in refusals)


async def test_terminal_output_that_is_not_utf8_stays_within_the_byte_limit(tmp_path: Path) -> None:
    # 2 000 bytes that are not UTF-8 decode to 2 000 U+FFFD, 6 000 bytes; then characters of 2, 3 and 4 bytes,
    # so the cut after decoding must land on a character boundary (ACP1-009).
    log = tmp_path / "agent.log"
    script = "import os; os.write(1, b'\\xff' * 2000 + 'é€😀'.encode() * 50 + b'\\xfe' * 7)"
    steps = []
    for limit in (1000, 999, 998, 997, 10):
        steps += [
            {
                "call": "terminal/create",
                "params": {
                    "sessionId": "s1",
                    "command": sys.executable,
                    "args": ["-c", script],
                    "outputByteLimit": limit,
                },
            },
            {"call": "terminal/wait_for_exit", "params": {"sessionId": "s1", "terminalId": "$terminal"}},
            {"call": "terminal/output", "params": {"sessionId": "s1", "terminalId": "$terminal"}},
            {"call": "terminal/release", "params": {"sessionId": "s1", "terminalId": "$terminal"}},
        ]
    async with ClientBuilder("hostile", "1").with_terminals().spawn(agent_argv(log)) as client:
        session = await client.new_session(str(tmp_path))
        await run_steps(session, steps)
    outputs = [answer["result"] for answer in answers(log) if "output" in answer.get("result", {})]
    assert len(outputs) == 5
    for limit, result in zip((1000, 999, 998, 997, 10), outputs, strict=True):
        size = len(result["output"].encode("utf-8"))
        assert limit - 3 <= size <= limit, (limit, size)
        assert result["truncated"] is True
        assert result["output"].endswith("\ufffd" * min(7, limit // 3))
        assert result["exitStatus"] == {"exitCode": 0, "signal": None}


def test_a_read_only_file_is_not_replaced_for_an_unprivileged_user(anyio_backend: str) -> None:
    # Root may write any file, so the client runs as nobody (setpriv), as an editor's user would. Its files live
    # in a fresh directory under /tmp: pytest's own temporary directories are closed to other users.
    if os.geteuid() != 0 or not _has("setpriv"):  # pragma: no cover - CI and this machine run as root
        pytest.skip("needs root to become another user (setpriv)")
    if _as_nobody([sys.executable, "-c", "pass"]).returncode != 0:  # e.g. a Python whose libpython is under /root
        pytest.skip(f"this Python ({sys.executable}) cannot be run by another user")
    place = Path(tempfile.mkdtemp(prefix="acp-unprivileged-"))
    try:
        _read_only_scenario(place, anyio_backend)
    finally:
        shutil.rmtree(place)


def _read_only_scenario(place: Path, backend: str) -> None:
    place.chmod(0o777)
    project = place / "project"
    project.mkdir()
    locked, sealed_dir = project / "locked.txt", project / "sealed"
    locked.write_text("keep me\n")
    sealed_dir.mkdir()
    inner = sealed_dir / "inner.txt"
    inner.write_text("keep me too\n")
    for path in (project, locked, sealed_dir, inner):
        os.chown(path, NOBODY, NOBODY)
    inner.chmod(0o666)
    locked.chmod(0o444)  # as `chmod a-w`: the user's own `open(path, "w")` fails with EACCES
    sealed_dir.chmod(0o555)  # the file is writable, its directory is not: no temporary file, no rename
    steps = [
        {"call": "fs/write_text_file", "params": {"sessionId": "s1", "path": str(locked), "content": "replaced"}},
        {"call": "fs/write_text_file", "params": {"sessionId": "s1", "path": str(inner), "content": "replaced"}},
        {
            "call": "fs/write_text_file",
            "params": {"sessionId": "s1", "path": str(project / "new.txt"), "content": "allowed"},
        },
    ]
    log = place / "agent.log"
    run = subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            sys.executable,
            str(Path(__file__).parent / "unprivileged_client.py"),
            backend,
            str(project),
            str(log),
            json.dumps(steps),
            _system_python(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=place,
        env={**os.environ, "PYTHONPATH": _source_root()},
    )
    assert run.returncode == 0, run.stderr
    locked_answer, sealed_answer, new_answer = answers(log)
    assert locked_answer["error"]["code"] == -32603
    assert "read-only" in locked_answer["error"]["message"] and "Traceback" not in locked_answer["error"]["message"]
    assert locked.read_text() == "keep me\n" and locked.stat().st_mode & 0o777 == 0o444
    assert sealed_answer["error"]["code"] == -32603 and "Permission denied" in sealed_answer["error"]["message"]
    assert inner.read_text() == "keep me too\n"
    assert new_answer["result"] == {} and (project / "new.txt").read_text() == "allowed"
    assert (project / "new.txt").stat().st_uid == NOBODY
    assert not [name for name in os.listdir(project) if name.endswith(".acp-write.tmp")]


def _as_nobody(argv: list[str]) -> subprocess.CompletedProcess[str]:
    setpriv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    return subprocess.run([*setpriv, *argv], capture_output=True, text=True, timeout=60, cwd="/")


def _system_python() -> str:
    """A Python that another user may run: this one may live under root's home (the agent needs no venv)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", sys.executable):
        if os.path.exists(candidate):
            return candidate
    return sys.executable


def _has(tool: str) -> bool:
    return any(os.access(os.path.join(d, tool), os.X_OK) for d in os.environ.get("PATH", "").split(os.pathsep))


def _source_root() -> str:
    return str(Path(__file__).resolve().parents[2])
