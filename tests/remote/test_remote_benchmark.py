"""benchmarks/remote_fold.py keeps working (a small size; no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.schema_source import REPO


def test_remote_fold_benchmark_runs() -> None:
    argv = [sys.executable, str(REPO / "benchmarks" / "remote_fold.py"), "--n", "300", "--rounds", "1", "--json"]
    argv.append("--no-peers")
    report = json.loads(subprocess.run(argv, check=True, capture_output=True, text=True, timeout=600).stdout)
    assert set(report["fold_per_s"]) == {"stdio", "http", "websocket"}
    assert all(rate > 0 for rate in report["fold_per_s"].values())
    assert "WebSocket fold >= 0.5x stdio" in report["targets"]
