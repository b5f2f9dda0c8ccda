"""The fold rate over the remote transports beside stdio: N ``agent_message_chunk`` updates folded into a
``Conversation`` when they come over Streamable HTTP (SSE), over WebSocket, and over a stdio pipe
(``conversation_fold.py``'s agent), each from a peer process that writes pre-encoded bytes as fast as it can;
beside them (when node is on the machine) the official TypeScript SDK 2.4.0's client over its
``createHttpStream`` against the same peer (``peers/ts/remote_client.mjs``, installed into ``peers/ts``).

Beside each of acp-session's rows, the client's CPU per update (this process, user + system, during the measured
turn): steadier than the rates on a shared machine, and what the client costs whatever the peer does.
``--trickle`` adds the two remote rows again with a peer that writes a message per socket write at about 50 000 a
second (as a server relaying one message at a time does), where each of the client's wake-ups brings few messages.

Run: ``.venv/bin/python benchmarks/remote_fold.py [--n 100000] [--backend asyncio|trio] [--no-peers] [--trickle]
[--json]``
Targets (issue 35): over WebSocket at least half the stdio rate; over HTTP at least 5x the TypeScript client.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from acp_session import ClientBuilder, ClientConnection

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import conversation_fold  # noqa: E402

BLASTER = HERE / "peers" / "remote_blaster.py"
TS_DIR = HERE / "peers" / "ts"
TS = "TypeScript SDK 2.4.0 createHttpStream"
TS_CLIENT = TS_DIR / "remote_client.mjs"
TRICKLE = "a message per write,"


def ts_available() -> bool:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return False
    if not (TS_DIR / "node_modules" / "@agentclientprotocol" / "sdk").exists():
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund"], cwd=TS_DIR, check=True)
    return True


def ts_rate(url: str, n: int) -> float:
    out = subprocess.run(["node", str(TS_CLIENT), url, str(n)], check=True, capture_output=True, text=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["updates_per_s"])


async def fold(client: ClientConnection, n: int) -> tuple[float, float]:
    """A warm-up turn, then the measured one: its rate (updates/s) and this process's CPU per update (µs)."""
    conversation = await client.start_conversation("/tmp", max_history_size=0)
    await conversation.chat_to_completion("warm up")
    gc.collect()
    cpu = time.process_time()
    start = time.perf_counter()
    response = await conversation.chat_to_completion("go")
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    assert len(response.text) == 14 * n, len(response.text)
    return n / elapsed, cpu / n * 1e6


async def remote_rate(url: str, n: int) -> tuple[float, float]:
    async with ClientBuilder("bench", "1").connect_url(url) as client:
        return await fold(client, n)


async def stdio_rate(argv: list[str], n: int) -> tuple[float, float]:
    async with ClientBuilder("bench", "1").spawn(argv) as client:
        return await fold(client, n)


def measure(n: int, backend: str, rounds: int, peers: bool, trickle: bool = False) -> dict[str, Any]:
    """Every client once per round, the rounds alternating: rates (best and median of the rounds) and the targets'
    ratios taken within each round (the same moments of the machine), their median judged; the client's CPU per
    update (median of the rounds) for acp-session's rows."""
    lines = conversation_fold.chunk_lines(n)
    profiles = ["http", "websocket"]
    if trickle:
        profiles += [f"{TRICKLE} http", f"{TRICKLE} websocket"]
    if peers and ts_available():
        profiles.append(TS)
    runs: list[dict[str, float]] = []
    cpu: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        chunk_file, agent_file = Path(tmp) / "chunks.jsonl", Path(tmp) / "agent.py"
        chunk_file.write_bytes(b"\n".join(lines) + b"\n")
        agent_file.write_text(conversation_fold.AGENT)
        agent = [sys.executable, str(agent_file), str(n), str(chunk_file)]
        for _ in range(rounds):
            rate, used = anyio.run(stdio_rate, agent, n, backend=backend)
            run = {"stdio": rate}
            cpu.setdefault("stdio", []).append(used)
            for profile in profiles:
                argv = [sys.executable, str(BLASTER), str(chunk_file)]
                if profile.startswith(TRICKLE):
                    argv.append("--trickle")
                with subprocess.Popen(argv, stdout=subprocess.PIPE) as peer:
                    assert peer.stdout is not None
                    url = peer.stdout.readline().decode().strip()
                    if profile.endswith("websocket"):
                        url = "ws" + url.removeprefix("http")
                    try:
                        if profile == TS:
                            run[profile] = ts_rate(url, n)
                        else:
                            run[profile], used = anyio.run(remote_rate, url, n, backend=backend)
                            cpu.setdefault(profile, []).append(used)
                    finally:
                        peer.kill()
            runs.append(run)
    ratios = {
        "http_to_stdio": statistics.median(run["http"] / run["stdio"] for run in runs),
        "websocket_to_stdio": statistics.median(run["websocket"] / run["stdio"] for run in runs),
    }
    targets = {"WebSocket fold >= 0.5x stdio": ratios["websocket_to_stdio"] >= 0.5}
    if TS in profiles:
        ratios["http_to_ts"] = statistics.median(run["http"] / run[TS] for run in runs)
        targets[f"HTTP fold >= 5x {TS}"] = ratios["http_to_ts"] >= 5
    names = ["stdio", *profiles]
    return {
        "n": n,
        "backend": backend,
        "rounds": rounds,
        "fold_per_s": {name: max(run[name] for run in runs) for name in names},
        "median_fold_per_s": {name: statistics.median(run[name] for run in runs) for name in names},
        "median_ratios": ratios,
        "client_cpu_us_per_update": {name: statistics.median(used) for name, used in cpu.items()},
        "targets": targets,
    }


def print_report(report: dict[str, Any], indent: str = "  ") -> None:
    rates, medians, ratios = report["fold_per_s"], report["median_fold_per_s"], report["median_ratios"]
    cpu = report.get("client_cpu_us_per_update", {})
    print(f"{indent}{'client':<40} {'best/s':>10} {'median/s':>10} {'client CPU/update':>18}")
    for name, rate in rates.items():
        used = f"{cpu[name]:>15.2f} µs" if name in cpu else ""
        print(f"{indent}{name:<40} {rate:>10,.0f} {medians[name]:>10,.0f} {used}")
    text = ", ".join(f"{key.replace('_to_', ' / ').replace('_', ' ')} {value:.2f}x" for key, value in ratios.items())
    print(f"{indent}median of the rounds' ratios: {text}")
    for target, met in report["targets"].items():
        print(f"{indent}target: {target}: {'met' if met else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-peers", action="store_true", help="leave out the TypeScript SDK's client")
    parser.add_argument("--trickle", action="store_true", help="also a peer writing a message per socket write")
    args = parser.parse_args()
    report = measure(args.n, args.backend, args.rounds, not args.no_peers, args.trickle)
    if args.json:
        print(json.dumps(report))
        return
    print(f"Conversation fold, {args.n:,} chunk updates ({args.backend}), {args.rounds} alternating rounds")
    print_report(report)


if __name__ == "__main__":
    main()
