"""The round-trip floor, measured the way ``peer_ours.py config`` is: from a fresh client process.

A bare line echo child over the same direct pipe I/O the library uses (``rpc_throughput.bare_echo_latencies``).
Prints one JSON line with every sample in microseconds.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from rpc_throughput import bare_echo_latencies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    samples = anyio.run(bare_echo_latencies, args.rounds)
    print(json.dumps({"samples_us": [round(sample * 1e6, 2) for sample in samples]}))


if __name__ == "__main__":
    main()
