"""acp-session beside the official ACP SDKs, on the same machine and the same generated streams.

Run: ``.venv/bin/python benchmarks/compare.py [--sizes 10000 100000] [--quick]``

What one run measures (each client in its own process, against ``peers/cheap_agent.py``):

* N streamed ``agent_message_chunk`` updates (40-byte texts) over a real stdio pipe, folded into the final
  text (verified): acp-session with a bare ``on_session_update`` handler (and with a ``Conversation`` when
  the conversation layer provides ``peer_ours.py conversation``), the official Python SDK
  (``agent-client-protocol`` 0.12.1, v1 wire) and the official TypeScript SDK's v2 client (when node is on
  the machine);
* lower bounds over the same bytes: a raw msgspec typed-decode loop, and ``cat`` through a pipe;
* the v1 row: the same turn spoken in ACP v1 (``cheap_agent.py --wire v1``: chunks without ``messageId``,
  the turn ended by the ``session/prompt`` response), folded by acp-session's ``Conversation`` through the
  v1 adapter, beside its own raw typed decode of the v1 chunk lines; its fold / raw-decode ratio is set
  beside the v2 row's;
* ``session/set_config_option`` round trip (p50, p99) beside a bare line echo over the same kind of pipe
  (``round_trip.py``: the clients take turns, each in its own process);
* cold start (process start to the first prompt accepted; for the v1 SDK, to its first update) at N = 10;
* peak RSS of each client process;
* the fold on trio too (``peer_ours.py conversation --backend trio``), against the same raw decode;
* the scaling rows (``scaling.py``, unless ``--no-scaling``): 1 to 1 000 sessions streaming at once on one
  connection, and 100 connections of one session each.
* the remote rows (``remote_fold.py``, at the largest N): the ``Conversation`` fold over Streamable HTTP and over
  WebSocket beside the same fold over stdio, and beside the official TypeScript SDK's ``createHttpStream`` client
  (when node is on the machine), all against one peer that writes pre-encoded bytes as fast as the socket takes
  them (``peers/remote_blaster.py``), in alternating rounds; the targets judge the median of the rounds' ratios.

The SDKs are installed into ``benchmarks/.peers/`` (a separate virtualenv and ``peers/ts/node_modules``),
never into the package's environment. Results: a table on stdout and ``benchmarks/results/compare.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

HERE = Path(__file__).resolve().parent
PEERS = HERE / "peers"
AGENT = PEERS / "cheap_agent.py"
PEERS_VENV = HERE / ".peers" / "venv"
TS_DIR = PEERS / "ts"
PYTHON_SDK = "agent-client-protocol==0.12.1"

sys.path.insert(0, str(PEERS))
sys.path.insert(0, str(HERE))
import cheap_agent  # noqa: E402
import remote_fold  # noqa: E402
import round_trip  # noqa: E402
import scaling  # noqa: E402

from acp_session.schema import v1  # noqa: E402
from acp_session.schema.types import UpdateSessionNotification  # noqa: E402


def setup_peers() -> tuple[Path | None, bool]:
    """Install the peer SDKs once; returns the peer Python (None if unavailable) and whether node is usable."""
    python = PEERS_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], check=True)
    probe = subprocess.run([str(python), "-c", "import acp"], capture_output=True)
    if probe.returncode != 0:
        subprocess.run([str(python), "-m", "pip", "install", "-q", PYTHON_SDK], check=True)
    node = shutil.which("node") is not None and shutil.which("npm") is not None
    if node and not (TS_DIR / "node_modules" / "@agentclientprotocol" / "sdk").exists():
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund"], cwd=TS_DIR, check=True)
    return python, node


def compile_sources() -> None:
    """Write the bytecode of acp-session and of the benchmark clients before anything is timed.

    An installed package comes with its bytecode (pip compiles a wheel's modules), and so do the peer SDKs in
    ``benchmarks/.peers``; a checkout installed in editable mode has none until Python writes it on first
    import, which it never does where ``PYTHONDONTWRITEBYTECODE`` is set (this machine's default). Without
    this, every acp-session client process would compile the whole package from source (about 100 ms of its
    cold start) while the peers start from bytecode."""
    import compileall

    compileall.compile_dir(str(HERE.parent / "acp_session"), quiet=1)
    for folder in (PEERS, HERE):  # their own modules only (not the peers' virtualenv or node_modules)
        compileall.compile_dir(str(folder), maxlevels=0, quiet=1)


def run_client(argv: list[str]) -> dict[str, Any]:
    out = subprocess.run(argv, check=True, capture_output=True, text=True, cwd=HERE.parent).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def clients(peer_python: Path | None, node: bool) -> dict[str, list[str]]:
    ours = [sys.executable, str(PEERS / "peer_ours.py")]
    table = {"acp-session (bare handler)": [*ours, "bare"]}
    if _supports_conversation():
        table[V2_CLIENT] = [*ours, "conversation"]
        table[V2_TRIO] = [*ours, "conversation", "--backend", "trio"]
    if peer_python is not None:
        table["official Python SDK 0.12.1 (v1)"] = [str(peer_python), str(PEERS / "peer_python_sdk.py")]
    if node:
        table["official TypeScript SDK 2.4.0 (v2)"] = ["node", str(TS_DIR / "client.mjs"), "--python", sys.executable]
    return table


def _supports_conversation() -> bool:
    text = (PEERS / "peer_ours.py").read_text()
    return '"conversation"' in text


V1_CLIENT = "acp-session (Conversation, v1 wire)"
V2_CLIENT = "acp-session (Conversation)"
V2_TRIO = "acp-session (Conversation, trio)"
FLOOR_SHARE = {V2_CLIENT: 0.6, V2_TRIO: 0.55}
"""Issue 40: the fold at least this share of the raw typed decode of the same run, per backend."""
ECHO_SHARE = 1.5
"""Issue 40: the ``session/set_config_option`` round trip p50 at most this many times the bare pipe echo's."""
RAW = "raw msgspec typed decode"
RAW_V1 = "raw msgspec typed decode (v1)"
V1_RATIO_SHARE = 0.8
"""The v1 row's target: its fold / raw-decode ratio at least this share of the v2 row's in the same run (the same
ratio, with room for the noise of this machine: the v2 ratio alone moved between 0.45x and 0.80x in one session)."""


PIPE_FLOOR = "raw decode via the pipe"
"""A lower bound that pays the pipe's reads (``peers/pipe_floor.py``): what is left between it and the fold is the
library's own work. No target is set on it; the issue's targets are against the in-memory raw decode."""


def pipe_floor_client() -> list[str]:
    return [sys.executable, str(PEERS / "pipe_floor.py")]


def v1_client() -> list[str]:
    return [sys.executable, str(PEERS / "peer_ours.py"), "conversation", "--wire", "v1"]


WARMUP_CHUNKS = 1000
"""Every client first folds an unmeasured turn of this many chunks, as the in-process baseline is warmed up:
the rates compare steady states, not first-turn interpreter warm-up. Cold start is measured separately."""


def measure_client(argv: list[str], n: int, repeats: int) -> dict[str, Any]:
    best: dict[str, Any] = {}
    for _ in range(repeats):
        result = run_client(
            [
                *argv,
                *("--agent", str(AGENT), "--n", str(n), "--expect-chars", str(40 * n)),
                *("--t0", str(time.time()), "--warmup", str(WARMUP_CHUNKS)),
            ]
        )
        if not best or result["updates_per_s"] > best["updates_per_s"]:
            best = result
    return best


def cold_start(argv: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        result = run_client(
            [*argv, "--agent", str(AGENT), "--n", "10", "--expect-chars", "400", "--t0", str(time.time())]
        )
        times.append(result["cold_start_s"])
    return min(times)


def stream_bytes(n: int, wire: str = "v2") -> list[bytes]:
    """The exact update lines the cheap agent writes for one prompt (its chunk updates): on the v1 wire the same
    chunks without ``messageId``."""
    encoder = msgspec.json.Encoder()
    ids = {"messageId": "a1"} if wire == "v2" else {}
    return [
        encoder.encode(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": "sess-bench",
                    "update": {
                        "sessionUpdate": "agent_message_chunk",
                        **ids,
                        "content": {"type": "text", "text": cheap_agent.chunk_text(i)},
                    },
                },
            }
        )
        for i in range(n)
    ]


class _Envelope(msgspec.Struct, gc=False):  # untracked, like the generated types it carries
    jsonrpc: str
    method: str
    params: UpdateSessionNotification


class _EnvelopeV1(msgspec.Struct, gc=False):  # the same for v1: its generated params type
    jsonrpc: str
    method: str
    params: v1.SessionNotification


def raw_decode_rate(lines: list[bytes], repeats: int, envelope: type[Any] = _Envelope) -> float:
    decode = msgspec.json.Decoder(envelope).decode
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        parts = [decode(line).params.update.content.text for line in lines]
        elapsed = time.perf_counter() - start
        assert len("".join(parts)) == 40 * len(lines)
        best = max(best, len(lines) / elapsed)
    return best


def cat_rate(lines: list[bytes], repeats: int) -> float:
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
        f.write(b"\n".join(lines) + b"\n")
        f.flush()
        best = 0.0
        for _ in range(repeats):
            start = time.perf_counter()
            subprocess.run(["sh", "-c", f"cat {f.name} | cat > /dev/null"], check=True)
            best = max(best, len(lines) / (time.perf_counter() - start))
        return best


def round_trips(rounds: int) -> dict[str, float]:
    """``round_trip.py``: acp-session, a minimal hand-written typed client and the echoes, each in a fresh
    process of its own, taking turns so that each sees the same moments of the machine."""
    result = round_trip.measure(rounds)
    return {
        "echo_p50_us": result["echo"]["p50_us"],
        "echo_p99_us": result["echo"]["p99_us"],
        "stream_echo_p50_us": result["stream echo"]["p50_us"],
        "minimal_p50_us": result["minimal"]["p50_us"],
        "minimal_p99_us": result["minimal"]["p99_us"],
        "ours_p50_us": result["acp-session"]["p50_us"],
        "ours_p99_us": result["acp-session"]["p99_us"],
    }


def v1_report(
    rows: dict[str, dict[str, Any]],
    bounds: dict[str, float],
    v1_rows: dict[str, dict[str, Any]],
    v1_bounds: dict[str, float],
) -> dict[str, Any]:
    """The v1 row of one size: the v1 Conversation and its raw decode, each ratio beside the v2 row's."""
    v1_rate, v2_rate = v1_rows[V1_CLIENT]["updates_per_s"], rows[V2_CLIENT]["updates_per_s"]
    return {
        "clients": v1_rows,
        "lower_bounds": v1_bounds,
        "fold_to_raw": v1_rate / v1_bounds[RAW_V1],
        "v2_fold_to_raw": v2_rate / bounds[RAW],
        "v1_to_v2_fold_rate": v1_rate / v2_rate,
        "v1_to_v2_raw_rate": v1_bounds[RAW_V1] / bounds[RAW],
    }


def print_v1(v1_wire: dict[str, Any]) -> None:
    row, raw = v1_wire["clients"][V1_CLIENT], v1_wire["lower_bounds"][RAW_V1]
    rate = row["updates_per_s"]
    print("  the same turn in ACP v1 (chunks without messageId, ended by the session/prompt response):")
    print(f"  {V1_CLIENT:<38} {rate:>12,.0f} {row['peak_rss_kib'] / 1024:>8.1f}Mi")
    print(f"  {'lower bound: raw decode of the v1 lines':<38} {raw:>12,.0f} {'':>10} {rate / raw:>11.2f}x")
    print(
        f"  fold / raw decode: v1 {v1_wire['fold_to_raw']:.2f}x, v2 {v1_wire['v2_fold_to_raw']:.2f}x"
        f" (v1 at {v1_wire['fold_to_raw'] / v1_wire['v2_fold_to_raw']:.2f}x of v2's ratio);"
        f" v1 / v2 rates: fold {v1_wire['v1_to_v2_fold_rate']:.2f}x, raw decode {v1_wire['v1_to_v2_raw_rate']:.2f}x"
    )


def targets(report: dict[str, Any], ours_name: str) -> dict[str, bool]:
    """Each target of the performance issue, judged on this run's figures (peers that were not run are left out)."""
    out: dict[str, bool] = {}
    python_sdk, ts_sdk = "official Python SDK 0.12.1 (v1)", "official TypeScript SDK 2.4.0 (v2)"
    for n, size in report["sizes"].items():
        rows, ours = size["clients"], size["clients"][ours_name]["updates_per_s"]
        for peer in (python_sdk, ts_sdk):
            if peer in rows:
                out[f"N={n:,}: fold >= 10x {peer}"] = ours >= 10 * rows[peer]["updates_per_s"]
        raw = size["lower_bounds"]["raw msgspec typed decode"]
        out[f"N={n:,}: fold >= 1/3 of the raw typed decode"] = ours >= raw / 3
        for name, share in FLOOR_SHARE.items():
            if name in rows:
                ratio = rows[name]["updates_per_s"] / raw
                backend = "trio" if name == V2_TRIO else "asyncio"
                out[f"N={n:,}: fold on {backend} >= {share}x the raw typed decode ({ratio:.2f}x)"] = ratio >= share
        if "v1_wire" in size and V2_CLIENT in rows:
            v1_wire = size["v1_wire"]
            out[
                f"N={n:,}: v1 fold at the same ratio to the raw decode as v2 "
                f"(v1 ratio >= {V1_RATIO_SHARE}x the v2 ratio of this run)"
            ] = v1_wire["fold_to_raw"] >= V1_RATIO_SHARE * v1_wire["v2_fold_to_raw"]
    largest = report["sizes"][max(report["sizes"])]["clients"]
    if python_sdk in largest:
        peak = largest[ours_name]["peak_rss_kib"]
        out["peak RSS at the largest N <= the Python SDK's"] = peak <= largest[python_sdk]["peak_rss_kib"]
    starts = report["cold_start_s"]
    if python_sdk in starts:
        out["cold start <= half the Python SDK's"] = starts["acp-session (bare handler)"] <= starts[python_sdk] / 2
    trips = report["round_trip"]
    out["round trip p50 < 3x the bare pipe echo"] = trips["ours_p50_us"] < 3 * trips["echo_p50_us"]
    ratio = trips["ours_p50_us"] / trips["echo_p50_us"]
    out[f"round trip p50 <= {ECHO_SHARE}x the bare pipe echo ({ratio:.2f}x)"] = ratio <= ECHO_SHARE
    if "scaling" in report:
        out.update(report["scaling"]["targets"])
    if "remote" in report:
        remote = report["remote"]
        for line, met in remote["targets"].items():
            out[f"remote, N={remote['n']:,}: {line} (median of the rounds' ratios)"] = met
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=5, help="alternating rounds; the best of each client counts")
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--no-peers", action="store_true", help="only acp-session and the lower bounds")
    parser.add_argument("--remote-n", type=int, help="the remote rows' N (default: the largest size; 0: none)")
    parser.add_argument("--json-out", type=Path, default=HERE / "results" / "compare.json")
    parser.add_argument("--no-scaling", action="store_true", help="leave out the many-sessions rows (scaling.py)")
    parser.add_argument("--scaling-sessions", type=int, nargs="+", default=[1, 10, 100, 1000])
    parser.add_argument("--scaling-connections", type=int, default=100)
    parser.add_argument("--scaling-total", type=int, default=100_000)
    parser.add_argument("--scaling-repeats", type=int, default=3)
    parser.add_argument("--plot", type=Path, help="also draw the scaling curve into this PNG (the bench extra)")
    args = parser.parse_args()
    compile_sources()
    peer_python, node = (None, False) if args.no_peers else setup_peers()
    table = clients(peer_python, node)
    ours_name = "acp-session (Conversation)" if "acp-session (Conversation)" in table else "acp-session (bare handler)"
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "machine": os.uname().machine, "sizes": {}}
    v1_row = V2_CLIENT in table  # the v1 row is the Conversation's, beside the v2 Conversation
    for n in args.sizes:
        lines = stream_bytes(n)
        v1_lines = stream_bytes(n, "v1") if v1_row else []
        # Clients and lower bounds alternate (best of each): the machine's speed drifts between moments.
        raw_decode_rate(lines, 1)  # warm up the allocator for the in-process baseline
        if v1_row:
            raw_decode_rate(v1_lines, 1, _EnvelopeV1)
        rows: dict[str, dict[str, Any]] = {}
        bounds = {"raw msgspec typed decode": 0.0, PIPE_FLOOR: 0.0, "cat through a pipe": 0.0}
        v1_rows: dict[str, dict[str, Any]] = {}
        v1_bounds = {RAW_V1: 0.0}
        for _ in range(args.repeats):
            bounds["raw msgspec typed decode"] = max(bounds["raw msgspec typed decode"], raw_decode_rate(lines, 1))
            bounds["cat through a pipe"] = max(bounds["cat through a pipe"], cat_rate(lines, 1))
            bounds[PIPE_FLOOR] = max(bounds[PIPE_FLOOR], measure_client(pipe_floor_client(), n, 1)["updates_per_s"])
            for name, argv in table.items():
                row = measure_client(argv, n, 1)
                if name not in rows or row["updates_per_s"] > rows[name]["updates_per_s"]:
                    rows[name] = row
            if v1_row:
                v1_bounds[RAW_V1] = max(v1_bounds[RAW_V1], raw_decode_rate(v1_lines, 1, _EnvelopeV1))
                row = measure_client(v1_client(), n, 1)
                if V1_CLIENT not in v1_rows or row["updates_per_s"] > v1_rows[V1_CLIENT]["updates_per_s"]:
                    v1_rows[V1_CLIENT] = row
        report["sizes"][n] = {"clients": rows, "lower_bounds": bounds}
        if v1_row:
            report["sizes"][n]["v1_wire"] = v1_report(rows, bounds, v1_rows, v1_bounds)
        ours = rows[ours_name]["updates_per_s"]
        print(f"\nN = {n:,} chunk updates (40-byte texts), folded into the final text")
        print(f"  {'client':<38} {'updates/s':>12} {'peak RSS':>10} {'ours / this':>12}")
        for name, row in rows.items():
            print(
                f"  {name:<38} {row['updates_per_s']:>12,.0f} {row['peak_rss_kib'] / 1024:>8.1f}Mi "
                f"{ours / row['updates_per_s']:>11.2f}x"
            )
        for name, rate in bounds.items():
            print(f"  {'lower bound: ' + name:<38} {rate:>12,.0f} {'':>10} {ours / rate:>11.2f}x")
        if v1_row:
            print_v1(report["sizes"][n]["v1_wire"])
    # Cold start is a property of the client stack, not of the fold: the Conversation client only learns of the
    # acceptance through its turn, so it is left out and the bare client stands for acp-session.
    starts = {name: cold_start(argv, args.repeats) for name, argv in table.items() if "Conversation" not in name}
    start_ref = "acp-session (bare handler)"
    report["cold_start_s"] = starts
    print("\ncold start: process start to first prompt accepted (v1 SDK: to its first update), best of runs")
    for name, seconds in starts.items():
        print(f"  {name:<38} {seconds * 1000:>8.0f} ms  ({seconds / starts[start_ref]:.2f}x ours)")
    trips = round_trips(args.rounds)
    report["round_trip"] = trips
    print(f"\nsession/set_config_option round trip ({args.rounds} calls each, clients taking turns)")
    echo = trips["echo_p50_us"]
    print(f"  bare pipe echo    p50 {echo:7.1f} us  p99 {trips['echo_p99_us']:7.1f} us")
    print(f"  (echo via anyio process streams, for context: p50 {trips['stream_echo_p50_us']:.1f} us)")
    print(
        f"  minimal client    p50 {trips['minimal_p50_us']:7.1f} us  p99 {trips['minimal_p99_us']:7.1f} us"
        f"  ({trips['minimal_p50_us'] / echo:.2f}x echo p50; hand-written, for context)"
    )
    print(
        f"  acp-session       p50 {trips['ours_p50_us']:7.1f} us  p99 {trips['ours_p99_us']:7.1f} us"
        f"  ({trips['ours_p50_us'] / echo:.2f}x echo p50)"
    )
    if not args.no_scaling:
        report["scaling"] = scaling.scaling_report(
            args.scaling_sessions, args.scaling_connections, args.scaling_total, "asyncio", 16, args.scaling_repeats
        )
        scaling.print_report(report["scaling"])
        if args.plot:
            scaling.plot(report["scaling"], args.plot)
    remote_n = max(args.sizes) if args.remote_n is None else args.remote_n
    if remote_n > 0:
        report["remote"] = remote_fold.measure(remote_n, "asyncio", args.repeats, node)
        print(
            f"\nremote: Conversation fold of {remote_n:,} chunk updates over Streamable HTTP and WebSocket beside stdio"
        )
        print(f"(one peer writing pre-encoded bytes, {args.repeats} alternating rounds)")
        remote_fold.print_report(report["remote"])
    report["targets"] = targets(report, ours_name)
    print("\ntargets (issue: ten times the official SDKs), from this run")
    for line, met in report["targets"].items():
        print(f"  {'met    ' if met else 'NOT met'}  {line}")
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(report, indent=2))
    print(f"\nwritten: {args.json_out}")


if __name__ == "__main__":
    main()
