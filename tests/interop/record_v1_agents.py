"""Re-record the wire of the third-party ACP v1 agents into tests/interop/recordings/ (one JSON-lines file a run).

Run from the repository root, with the interop node packages installed::

    .venv/bin/python -m tests.interop.record_v1_agents [NAME ...]

Each line is ``{"from": "client"|"agent", "msg": <the JSON-RPC message>}`` in wire order. The scenarios are in
v1_scenarios.py; test_v1_agents_raw.py checks that a new run still matches every file.
"""

from __future__ import annotations

import shutil
import sys

from .v1_scenarios import RECORDINGS, SCENARIOS, run_all


def main(names: list[str]) -> int:
    unknown = set(names) - {s.name for s in SCENARIOS}
    if unknown:
        print(f"unknown scenarios: {sorted(unknown)}", file=sys.stderr)
        return 2
    node = shutil.which("node") or "node"
    chosen = [s for s in SCENARIOS if not names or s.name in names]
    RECORDINGS.mkdir(exist_ok=True)
    for name, run in run_all(chosen, node).items():
        path = RECORDINGS / f"{name}.jsonl"
        run.client.save(path)
        print(f"{path.relative_to(RECORDINGS.parent)}: {len(run.wire)} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
