"""The README's main-job example and the benchmarks keep working (small sizes; no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.schema_source import REPO


def test_sample_session_example_prints_the_decoded_session() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "sample_session.py")], check=True, capture_output=True, text=True
    ).stdout
    lines = out.splitlines()
    assert lines[0].startswith("UserMessage") and "Summarise README.md" in lines[0]
    assert "_acme/telemetry (extension, kept as raw JSON)" in out
    assert lines[-1].split() == ["state", "idle", "(end_turn)"]


def test_decode_benchmark_runs() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "decode_speed.py"), "--n", "300", "--repeats", "1", "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    results = json.loads(out)
    assert results["typed_structs_per_s"] > 0 and results["plain_dicts_per_s"] > 0
