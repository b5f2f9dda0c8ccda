"""A/B: this tree's ``compare.py`` figures beside another commit's, in alternating runs, as medians.

Run: ``.venv/bin/python benchmarks/ab.py --base REV [--runs 5] [--repeats 5] [--sizes 10000 100000]``

On a shared machine a whole run can be 1.5-2x slower than the next, so one run of each says nothing about a
change. This checks ``REV`` out into a temporary git worktree, then runs ``compare.py --no-peers --no-scaling
--remote-n 0`` there (its own benchmark scripts, its own package first on ``PYTHONPATH``) and here, taking
turns, ``--runs`` times each, and prints per figure the median and the range of each side and the ratio of the
medians: the fold / raw decode ratio of each client at each N (each measured in one run), the rates, and the
``set_config_option`` round trip against the echo. Uncommitted changes count as this tree's; ``--base HEAD``
measures exactly them. The worktree is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RAW = "raw msgspec typed decode"
PIPE_FLOOR = "raw decode via the pipe"  # compare.PIPE_FLOOR (ab.py reads reports of other commits too)


@contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """``rev`` checked out (detached) in a temporary directory, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="acp-ab-") as tmp:
        path = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(path), rev], check=True)
        try:
            yield path
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)], check=False)


def compare_run(tree: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """One ``compare.py`` run of ``tree``'s own scripts and package; its JSON report."""
    argv = [sys.executable, str(tree / "benchmarks" / "compare.py"), "--no-peers", "--no-scaling", "--remote-n", "0"]
    argv += ["--repeats", str(args.repeats), "--rounds", str(args.rounds), "--json-out", str(out)]
    argv += ["--sizes", *map(str, args.sizes)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}
    subprocess.run(argv, check=True, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def figures(report: dict[str, Any]) -> dict[str, float]:
    """The figures of one run that both sides' reports have, by name."""
    out: dict[str, float] = {}
    for n, size in report["sizes"].items():
        raw = size["lower_bounds"][RAW]
        out[f"N={int(n):,} raw decode, k/s"] = raw / 1000
        floor = size["lower_bounds"].get(PIPE_FLOOR)  # a base from before the pipe floor has none
        for client, row in size["clients"].items():
            out[f"N={int(n):,} {client}, k/s"] = row["updates_per_s"] / 1000
            out[f"N={int(n):,} {client} / raw decode"] = row["updates_per_s"] / raw
            if floor:
                out[f"N={int(n):,} {client} / raw decode through the pipe"] = row["updates_per_s"] / floor
        v1 = size.get("v1_wire")
        if v1:
            out[f"N={int(n):,} v1 wire / its raw decode"] = v1["fold_to_raw"]
    trip = report.get("round_trip")
    if trip:
        out["round trip p50, us"] = trip["ours_p50_us"]
        out["round trip p50 / echo p50"] = trip["ours_p50_us"] / trip["echo_p50_us"]
    return out


def summarize(runs: dict[str, list[dict[str, float]]]) -> list[tuple[str, list[float], list[float]]]:
    """Per figure both sides have: its values in the base's runs and in this tree's."""
    names = [name for name in runs["this"][0] if all(name in run for run in runs["base"] + runs["this"])]
    return [(name, [r[name] for r in runs["base"]], [r[name] for r in runs["this"]]) for name in names]


def print_table(rows: list[tuple[str, list[float], list[float]]], base: str, count: int) -> None:
    print(f"\nA/B, {count} alternating runs each: base {base} / this tree (medians, the range in brackets)")
    width = max(len(name) for name, _, _ in rows)
    print(f"  {'':<{width}}  {'base':>9}  {'this':>9}  {'this/base':>9}   ranges: base, this")
    for name, before, after in rows:
        b, a = statistics.median(before), statistics.median(after)
        spread = f"[{min(before):.3g}-{max(before):.3g}]  [{min(after):.3g}-{max(after):.3g}]"
        print(f"  {name:<{width}}  {b:9.3f}  {a:9.3f}  {a / b:8.3f}x   {spread}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit to measure against (HEAD: uncommitted changes)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each side, alternating")
    parser.add_argument("--repeats", type=int, default=5, help="compare.py's rounds per run (the best counts)")
    parser.add_argument("--rounds", type=int, default=2000, help="compare.py's round trips per client")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--json-out", type=Path, help="also write every run's figures here")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"base": [], "this": []}
    with worktree(args.base) as base_tree, tempfile.TemporaryDirectory() as tmp:
        for k in range(args.runs):
            for side, tree in (("base", base_tree), ("this", REPO)):
                report = compare_run(tree, args, Path(tmp) / f"{side}{k}.json")
                runs[side].append(figures(report))
                print(f"run {k + 1}/{args.runs}: {side} done", file=sys.stderr)
    rows = summarize(runs)
    print_table(rows, args.base, args.runs)
    if args.json_out:
        args.json_out.write_text(json.dumps({"base": args.base, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
