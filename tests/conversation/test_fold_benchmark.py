"""Smoke run of benchmarks/conversation_fold.py at a small N (no timing asserted, memory linearity is)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.schema_source import REPO


def test_conversation_fold_benchmark_runs_and_memory_is_linear() -> None:
    argv = [sys.executable, str(REPO / "benchmarks" / "conversation_fold.py"), "--n", "2000", "--memory", "--json"]
    results = json.loads(subprocess.run(argv, check=True, capture_output=True, text=True, timeout=60).stdout)
    assert results["raw_typed_decode_per_s"] > 0 and results["conversation_fold_per_s"] > 0
    assert results["conversation_iterate_per_s"] > 0 and results["fold_over_raw"] > 0
    per_n, per_2n = results["bytes_per_chunk_n"], results["bytes_per_chunk_2n"]
    assert 0 < per_2n < per_n * 1.2 and per_n < 400  # linear in the text kept, no per-chunk bloat
