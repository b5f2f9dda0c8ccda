"""Client mode against a hostile client (issue 41, 13): one that floods stdout with 64 MiB, leaves a ``setsid``
double-fork daemon holding its stdout and stderr, and never exits (or exits at once). The run still ends within
its ``--timeout``, with the client's checks failed, the runner's stdout holds only its report, and nothing of
the client is left running (``acp_conformance/client_mode/subject.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from tests.helpers.processes import alive

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads(
    (ROOT / "conformance" / "acp_conformance" / "client_mode" / "report.schema.json").read_text(encoding="utf-8")
)

HOSTILE_CLIENT = r"""
import os, sys, time
piddir, mode = sys.argv[1], sys.argv[2]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(os.path.join(piddir, "daemon-%d" % os.getpid()), "w"):
            pass
        while True:  # holds the client's stdout and stderr for good
            time.sleep(1)
    os._exit(0)
os.wait()
block = b"\x1b]0;pwned\x07" + b"x" * 65525 + b"\n"
for _ in range(1024):  # 64 MiB for the runner's terminal
    os.write(1, block)
if mode == "hang":
    time.sleep(3600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc tells the daemon's state")
@pytest.mark.parametrize("mode", ["hang", "exit"])
def test_a_daemonising_flooding_client_ends_within_its_timeout(tmp_path: Path, mode: str) -> None:
    script = tmp_path / "hostile_client.py"
    script.write_text(HOSTILE_CLIENT)
    timeout = 5.0
    options = ["--json", "--scenario", "basic", "--protocol", "2", "--timeout", str(timeout)]
    argv = [sys.executable, "-m", "acp_conformance.runner", "client", *options]
    started = time.monotonic()
    proc = subprocess.run(
        [*argv, "--", sys.executable, str(script), str(tmp_path), mode],
        capture_output=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    elapsed = time.monotonic() - started
    assert elapsed < timeout + 10, elapsed  # the deadline (plus start-up and the kill), never a wait for EOF
    report = json.loads(proc.stdout)  # nothing but the report: none of the client's 64 MiB
    jsonschema.validate(report, SCHEMA)
    assert len(proc.stdout) < 100_000 and b"pwned" not in proc.stdout and b"pwned" not in proc.stderr
    # It never started the scripted agent: not checked (exit 3), as an agent that does not start.
    assert proc.returncode == 3 and report["problem"] and report["verdict"]["conformant"] is False
    (run,) = report["runs"]
    assert run["exitCode"] == (None if mode == "hang" else 0)
    assert {check["status"] for check in report["checks"]} == {"NOT_TESTED"}
    daemons = [int(path.name.split("-")[1]) for path in tmp_path.glob("daemon-*")]
    assert len(daemons) == 1
    assert not alive(daemons[0])  # the daemon did not outlive the run
