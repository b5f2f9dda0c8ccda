"""The README's main-job example and the benchmarks keep working (small sizes; no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.schema_source import REPO


def test_sample_session_example_prints_the_decoded_session() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "sample_session.py")], check=True, capture_output=True, text=True
    ).stdout
    lines = out.splitlines()
    assert lines[0].startswith("UserMessage") and "Summarise README.md" in lines[0]
    assert "_acme/telemetry (extension, kept as raw JSON)" in out
    assert lines[-1].split() == ["state", "idle", "(end_turn)"]


def run_benchmark(script: str, *args: str) -> str:
    """Its standard output; a failing benchmark fails the test, and so does one still running after 10 minutes
    (a benchmark client that never sees the end of its turn would otherwise hang the suite)."""
    argv = [sys.executable, str(REPO / "benchmarks" / script), *args]
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=600).stdout


def test_decode_benchmark_runs() -> None:
    results = json.loads(run_benchmark("decode_speed.py", "--n", "300", "--repeats", "1", "--json"))
    assert results["typed_structs_per_s"] > 0 and results["plain_dicts_per_s"] > 0


SMALL_SCALING = ("--scaling-sessions", "1", "10", "--scaling-connections", "2", "--scaling-total", "200")


def test_compare_benchmark_runs_at_small_size(tmp_path: Path) -> None:
    out_file = tmp_path / "compare.json"
    args = ("--no-peers", "--sizes", "200", "--repeats", "1", "--rounds", "50", "--json-out", str(out_file))
    out = run_benchmark("compare.py", *args, *SMALL_SCALING, "--scaling-repeats", "1")
    assert "acp-session (bare handler)" in out and "lower bound: raw msgspec typed decode" in out
    report = json.loads(out_file.read_text())
    client = report["sizes"]["200"]["clients"]["acp-session (bare handler)"]
    assert client["updates_per_s"] > 0 and client["peak_rss_kib"] > 0
    # The lower bound that pays the pipe's reads (peers/pipe_floor.py): decoded the whole turn, the text checked.
    assert report["sizes"]["200"]["lower_bounds"]["raw decode via the pipe"] > 0
    assert "lower bound: raw decode via the pipe" in out
    trips = report["round_trip"]
    assert trips["ours_p50_us"] > 0 and trips["echo_p50_us"] > 0 and trips["minimal_p50_us"] > 0
    assert "minimal client" in out
    assert "round trip p50 < 3x the bare pipe echo" in report["targets"]
    assert "targets (issue: ten times the official SDKs), from this run" in out
    # Issue 40's targets: the fold beside the raw decode on both backends, the round trip beside the echo, scaling.
    lines = list(report["targets"])
    assert any(line.startswith("N=200: fold on asyncio >= 0.6x the raw typed decode") for line in lines)
    assert any(line.startswith("N=200: fold on trio >= 0.55x the raw typed decode") for line in lines)
    assert any(line.startswith("round trip p50 <= 1.5x the bare pipe echo") for line in lines)
    assert any(line.startswith("scaling: 10 sessions at >= 80% of 1 session's rate") for line in lines)
    assert any(line.startswith("scaling: memory linear in the text held") for line in lines)
    rows = report["scaling"]["rows"]
    assert {(row["sessions"], row["connections"], row["total"]) for row in rows} == {
        (1, 1, 200),
        (10, 1, 200),
        (2, 2, 200),
        (10, 1, 400),
    }
    assert all(row["updates_per_s"] > 0 and 0 < row["p50_delivery_ms"] <= row["p99_delivery_ms"] for row in rows)
    assert report["sizes"]["200"]["clients"]["acp-session (Conversation, trio)"]["updates_per_s"] > 0
    remote = report["remote"]  # the remote rows: the fold over HTTP and WebSocket beside stdio, at the largest N
    assert remote["n"] == 200 and set(remote["fold_per_s"]) == {"stdio", "http", "websocket"}
    assert all(rate > 0 for rate in remote["fold_per_s"].values())
    assert "remote, N=200: WebSocket fold >= 0.5x stdio (median of the rounds' ratios)" in report["targets"]
    assert "remote: Conversation fold of 200 chunk updates" in out


def test_scaling_benchmark_runs_at_small_size(tmp_path: Path) -> None:
    plot, out_file = tmp_path / "scaling.png", tmp_path / "scaling.json"
    args = ("--sessions", "1", "3", "--connections", "2", "--total", "300", "--repeats", "1")
    out = run_benchmark("scaling.py", *args, "--plot", str(plot), "--json-out", str(out_file))
    assert "3 on 1" in out and "2 x 1" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads(out_file.read_text())
    held = {(row["sessions"], row["total"]): row["text_held_bytes"] for row in report["rows"]}
    assert held[(3, 300)] == 40 * 300 and held[(3, 600)] == 40 * 600  # every chunk folded into its session


def test_fold_profile_runs_at_small_size() -> None:
    result = json.loads(run_benchmark("fold_profile.py", "--n", "300", "--rounds", "1", "--json"))
    assert set(result["300"]) == {"raw", "framing", "rpc", "fold", "fold_by_line"}
    assert all(ns > 0 for ns in result["300"].values())


def test_ab_benchmark_sets_a_commit_beside_this_tree_at_small_size(tmp_path: Path) -> None:
    """``ab.py`` against HEAD (this tree's uncommitted changes, none in CI): both sides' figures, one run each."""
    out_file = tmp_path / "ab.json"
    args = ("--base", "HEAD", "--runs", "1", "--repeats", "1", "--rounds", "50", "--sizes", "200")
    out = run_benchmark("ab.py", *args, "--json-out", str(out_file))
    assert "A/B, 1 alternating runs each: base HEAD" in out and "acp-session (Conversation) / raw decode" in out
    runs = json.loads(out_file.read_text())["runs"]
    assert len(runs["base"]) == len(runs["this"]) == 1 and runs["base"][0].keys() == runs["this"][0].keys()
    assert all(value > 0 for value in runs["this"][0].values())


def test_compare_benchmark_runs_its_v1_row_at_small_size(tmp_path: Path) -> None:
    out_file = tmp_path / "compare.json"
    args = ("--no-peers", "--sizes", "200", "--repeats", "1", "--rounds", "50", "--json-out", str(out_file))
    out = run_benchmark("compare.py", *args, "--no-scaling")
    assert "acp-session (Conversation, v1 wire)" in out and "lower bound: raw decode of the v1 lines" in out
    report = json.loads(out_file.read_text())
    v1_wire = report["sizes"]["200"]["v1_wire"]
    client = v1_wire["clients"]["acp-session (Conversation, v1 wire)"]
    assert client["updates_per_s"] > 0 and client["peak_rss_kib"] > 0
    assert v1_wire["lower_bounds"]["raw msgspec typed decode (v1)"] > 0
    assert v1_wire["fold_to_raw"] > 0 and v1_wire["v2_fold_to_raw"] > 0
    v1_target = "N=200: v1 fold at the same ratio to the raw decode as v2"
    assert any(line.startswith(v1_target) for line in report["targets"])
    assert "N=200: fold >= 1/3 of the raw typed decode" in report["targets"]  # the v2 targets stay


def test_round_trip_benchmark_runs_its_clients_in_turns() -> None:
    result = json.loads(run_benchmark("round_trip.py", "--rounds", "40", "--block", "20", "--json"))
    assert set(result) == {"echo", "stream echo", "minimal", "acp-session"}
    assert all(0 < row["p50_us"] <= row["p99_us"] for row in result.values())


def test_sse_benchmark_runs_its_rows_beside_the_raw_scan() -> None:
    result = json.loads(run_benchmark("sse_parse.py", "--size-mib", "0.25", "--repeats", "1", "--json"))
    rows = {row["row"]: row for row in result["rows"]}
    assert set(rows) == {
        "one 0.25 MiB event, 64 KiB chunks",
        "one 0.25 MiB event, 4 KiB chunks",
        "100 000 small events, 64 KiB chunks",
        "100 000 small events, feed_runs",
    }
    assert all(row["parser_s"] > 0 and row["raw_scan_s"] > 0 and row["ratio"] > 0 for row in rows.values())


def test_host_benchmark_runs_quick() -> None:
    """``host.py --quick``: the fold through ``acp-session serve`` over both profiles beside stdio, and the memory of
    idle host sessions (no figure asserted beyond its being measured)."""
    report = json.loads(run_benchmark("host.py", "--quick", "--json"))
    fold = report["fold"]
    assert set(fold["median_fold_per_s"]) == {"stdio", "host, http", "host, websocket"}
    assert all(rate > 0 for rate in fold["median_fold_per_s"].values())
    assert set(fold["targets"]) == {"host, http: fold >= 0.5x stdio", "host, websocket: fold >= 0.5x stdio"}
    memory = report["memory"]
    assert memory["sessions"] == 20 and memory["rss_one_session_bytes"] > 0 and memory["rss_all_sessions_bytes"] > 0
