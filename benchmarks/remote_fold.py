"""The fold rate over the remote transports beside stdio: N ``agent_message_chunk`` updates folded into a
``Conversation`` when they come over Streamable HTTP (SSE), over WebSocket, and over a stdio pipe
(``conversation_fold.py``'s agent), each from a peer process that writes pre-encoded bytes as fast as it can;
beside them (when node is on the machine) the official TypeScript SDK 2.4.0's client over its
``createHttpStream`` against the same peer (``peers/ts/remote_client.mjs``, installed into ``peers/ts``).

Run: ``.venv/bin/python benchmarks/remote_fold.py [--n 100000] [--backend asyncio|trio] [--no-peers] [--json]``
Targets (issue 35): over WebSocket at least half the stdio rate; over HTTP at least 5x the TypeScript client.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from acp_session import ClientBuilder

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import conversation_fold  # noqa: E402

BLASTER = HERE / "peers" / "remote_blaster.py"
TS_DIR = HERE / "peers" / "ts"
TS = "TypeScript SDK 2.4.0 createHttpStream"
TS_CLIENT = TS_DIR / "remote_client.mjs"


def ts_available() -> bool:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return False
    if not (TS_DIR / "node_modules" / "@agentclientprotocol" / "sdk").exists():
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund"], cwd=TS_DIR, check=True)
    return True


def ts_rate(url: str, n: int) -> float:
    out = subprocess.run(["node", str(TS_CLIENT), url, str(n)], check=True, capture_output=True, text=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["updates_per_s"])


async def remote_rate(url: str, n: int) -> float:
    async with ClientBuilder("bench", "1").connect_url(url) as client:
        return (await conversation_fold.timed_fold(client, n))[1]


def measure(n: int, backend: str, rounds: int, peers: bool) -> dict[str, Any]:
    """Every client once per round, the rounds alternating: rates (best and median of the rounds) and the targets'
    ratios taken within each round (the same moments of the machine), their median judged."""
    lines = conversation_fold.chunk_lines(n)
    profiles = ["http", "websocket"]
    if peers and ts_available():
        profiles.append(TS)
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        chunk_file, agent_file = Path(tmp) / "chunks.jsonl", Path(tmp) / "agent.py"
        chunk_file.write_bytes(b"\n".join(lines) + b"\n")
        agent_file.write_text(conversation_fold.AGENT)
        for _ in range(rounds):
            stdio, _ = anyio.run(conversation_fold.pipe_rates, n, chunk_file, agent_file, backend=backend)
            run = {"stdio": stdio}
            for profile in profiles:
                with subprocess.Popen([sys.executable, str(BLASTER), str(chunk_file)], stdout=subprocess.PIPE) as peer:
                    assert peer.stdout is not None
                    url = peer.stdout.readline().decode().strip()
                    if profile == "websocket":
                        url = "ws" + url.removeprefix("http")
                    try:
                        run[profile] = (
                            ts_rate(url, n) if profile == TS else anyio.run(remote_rate, url, n, backend=backend)
                        )
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
        "targets": targets,
    }


def print_report(report: dict[str, Any], indent: str = "  ") -> None:
    rates, medians, ratios = report["fold_per_s"], report["median_fold_per_s"], report["median_ratios"]
    print(f"{indent}{'client':<40} {'best/s':>10} {'median/s':>10}")
    for name, rate in rates.items():
        print(f"{indent}{name:<40} {rate:>10,.0f} {medians[name]:>10,.0f}")
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
    args = parser.parse_args()
    report = measure(args.n, args.backend, args.rounds, not args.no_peers)
    if args.json:
        print(json.dumps(report))
        return
    print(f"Conversation fold, {args.n:,} chunk updates ({args.backend}), {args.rounds} alternating rounds")
    print_report(report)


if __name__ == "__main__":
    main()
