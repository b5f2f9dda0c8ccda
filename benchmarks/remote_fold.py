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
    lines = conversation_fold.chunk_lines(n)
    best = {"stdio": 0.0, "http": 0.0, "websocket": 0.0}
    profiles = ["http", "websocket"]
    if peers and ts_available():
        best[TS] = 0.0
        profiles.append(TS)
    with tempfile.TemporaryDirectory() as tmp:
        chunk_file, agent_file = Path(tmp) / "chunks.jsonl", Path(tmp) / "agent.py"
        chunk_file.write_bytes(b"\n".join(lines) + b"\n")
        agent_file.write_text(conversation_fold.AGENT)
        for _ in range(rounds):  # alternating, the best of each: the machine's speed drifts
            stdio, _ = anyio.run(conversation_fold.pipe_rates, n, chunk_file, agent_file, backend=backend)
            best["stdio"] = max(best["stdio"], stdio)
            for profile in profiles:
                with subprocess.Popen([sys.executable, str(BLASTER), str(chunk_file)], stdout=subprocess.PIPE) as peer:
                    assert peer.stdout is not None
                    url = peer.stdout.readline().decode().strip()
                    if profile == "websocket":
                        url = "ws" + url.removeprefix("http")
                    try:
                        rate = ts_rate(url, n) if profile == TS else anyio.run(remote_rate, url, n, backend=backend)
                        best[profile] = max(best[profile], rate)
                    finally:
                        peer.kill()
    targets = {"WebSocket fold >= 0.5x stdio": best["websocket"] >= 0.5 * best["stdio"]}
    if TS in best:
        targets[f"HTTP fold >= 5x {TS}"] = best["http"] >= 5 * best[TS]
    return {
        "n": n,
        "backend": backend,
        "fold_per_s": best,
        "http_to_stdio": best["http"] / best["stdio"],
        "websocket_to_stdio": best["websocket"] / best["stdio"],
        "targets": targets,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-peers", action="store_true", help="leave out the TypeScript SDK's client")
    args = parser.parse_args()
    report = measure(args.n, args.backend, args.rounds, not args.no_peers)
    if args.json:
        print(json.dumps(report))
        return
    rates = report["fold_per_s"]
    print(f"Conversation fold, {args.n:,} chunk updates ({args.backend}), best of {args.rounds}")
    for name, rate in rates.items():
        share = "" if name == "stdio" else f"  ({rate / rates['stdio']:.2f}x stdio)"
        print(f"  {name:<40} {rate:>12,.0f} updates/s{share}")
    for target, met in report["targets"].items():
        print(f"  target: {target}: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
