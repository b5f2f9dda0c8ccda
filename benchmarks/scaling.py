"""Many sessions streaming at once: aggregate updates/s, p99 time to deliver an update, peak RSS.

Run: ``.venv/bin/python benchmarks/scaling.py [--sessions 1 10 100 1000] [--connections 100] [--total 100000]
[--backend asyncio|trio] [--plot docs/scaling.png]``

Each row runs in a fresh client process (``--row``), so its peak RSS is its own. On one connection, one agent
process (``AGENT`` below, standard library only) opens S sessions; the client starts a ``Conversation`` on each,
sends every prompt, and reads every turn's events (``async for`` over ``chat()``) in one task per session. The
agent then streams ``--total`` chunk updates in all, the sessions taking turns ``--run`` chunks at a time (16:
an agent writes a few tokens of one session, then another's), and ends each turn with ``idle``. With
``--connections C``, C agent processes of one session each share the total instead.

* rate: all updates over the stream's time, from the agent's first write of a chunk (its stamp) to the last
  fragment read (the prompts before it, one round trip each, are left out; ``with_prompts_updates_per_s``
  counts from the first prompt sent to the last turn finished);
* delivery time: each chunk's text starts with the time the agent wrote its piece of the stream; when a
  ``ChatText`` fragment reaches its reader, the oldest stamp it carries stands for all its chunks (an upper
  bound for the others), and p50 / p99 are over all updates;
* memory: the client's peak RSS (VmHWM), its RSS before the stream, and the text the Conversations hold at the end.

Targets (issue 40): the rate flat within 20 % from 1 to 1 000 sessions; memory linear in the text held (from
the row at the total to the row at twice the total, at most ``MAX_BYTES_PER_TEXT_BYTE`` bytes of peak RSS per
byte of text more, see ``linear_memory``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "peers"))
from rss import peak_rss_kib  # noqa: E402

from acp_session import ClientBuilder  # noqa: E402
from acp_session.conversation import ChatText, Conversation  # noqa: E402

STAMP = 17  # "1764640000.123456": the write time at the start of each chunk's 40-byte text
CHUNK = 40
FLAT_WITHIN = 0.20
"""The rate target: every row of one connection within 20 % of the one-session row."""
MAX_BYTES_PER_TEXT_BYTE = 4
"""The memory target: twice the text adds at most this many bytes of peak RSS per byte of text (a streamed
message is kept at about 2x its text, docs/performance.md; the rest is the allocator's slack)."""

AGENT = r"""
import json, sys, time
sessions, total, run = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
PH = b"@" * 17
out = sys.stdout.buffer
def line(obj):
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"
def note(sid, update):
    return line({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})
def chunk(sid):
    text = PH.decode() + " chunk of a reply ".ljust(40 - 17, ".")
    return note(sid, {"sessionUpdate": "agent_message_chunk", "messageId": "m-" + sid,
                      "content": {"type": "text", "text": text}})
ids = ["s%d" % k for k in range(sessions)]
per = [total // sessions + (1 if k < total % sessions else 0) for k in range(sessions)]
# The stream, pre-encoded in pieces of `run` chunks of one session, the sessions taking turns; the write time is
# put in when a piece of about 64 KiB is written (one bytes.replace), so the agent's own work stays small.
templates = [chunk(sid) for sid in ids]
order, left = [], list(per)
while any(left):
    for k in range(sessions):
        if left[k]:
            take = min(run, left[k])
            order.append(templates[k] * take)
            left[k] -= take
pieces, size, current = [], 0, []
for part in order:
    current.append(part)
    size += len(part)
    if size >= 65536:
        pieces.append(b"".join(current)); current, size = [], 0
if current:
    pieces.append(b"".join(current))
prompts, opened = {}, 0
for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        out.write(line({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 2,
                  "info": {"name": "scaling", "version": "1"}, "capabilities": {"session": {}}}}))
    elif method == "session/new":
        out.write(line({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": ids[opened]}}))
        opened += 1
    elif method == "session/prompt":
        sid = msg["params"]["sessionId"]
        prompts[sid] = rid
        out.write(line({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u-" + sid}}))
        out.write(note(sid, {"sessionUpdate": "user_message", "messageId": "u-" + sid,
                             "content": [{"type": "text", "text": "go"}]}))
        out.write(note(sid, {"sessionUpdate": "state_update", "state": "running"}))
        if len(prompts) == sessions:
            out.flush()
            for piece in pieces:
                out.write(piece.replace(PH, b"%17.6f" % time.time()))
            for sid in ids:
                out.write(note(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))
    out.flush()
"""


async def _read_turn(conversation: Conversation, seen: list[tuple[float, float, int]]) -> int:
    """One session's turn: its events read as an application would; per fragment, the oldest write time it
    carries, when it arrived, and how many chunks it holds."""
    now = time.time
    received = 0
    async for event in conversation.chat("go"):
        if type(event) is ChatText:
            text = event.text
            count = len(text) // CHUNK
            received += count
            seen.append((float(text[:STAMP]), now(), count))
    return received


async def run_row(args: argparse.Namespace) -> dict[str, Any]:
    sessions, connections = args.sessions, args.connections
    per_connection = sessions if connections == 1 else 1
    with tempfile.TemporaryDirectory() as tmp:
        agent = Path(tmp) / "agent.py"
        agent.write_text(AGENT)
        seen: list[tuple[float, float, int]] = []
        counts: list[int] = []
        async with AsyncExitStack() as stack:
            conversations: list[Conversation] = []
            share = [args.total // connections + (1 if k < args.total % connections else 0) for k in range(connections)]
            for k in range(connections):
                argv = [sys.executable, str(agent), str(per_connection), str(share[k]), str(args.run)]
                client = await stack.enter_async_context(ClientBuilder("scaling", "1").spawn(argv))
                for _ in range(per_connection):
                    conversations.append(await client.start_conversation("/tmp", max_history_size=0))
            rss_before = _rss_kib()

            async def one(conversation: Conversation) -> None:
                if args.mode == "await":
                    response = await conversation.chat_to_completion("go")
                    counts.append(len(response.text) // CHUNK)
                    seen.append((float(response.text[:STAMP]), time.time(), 0))
                    return
                counts.append(await _read_turn(conversation, seen))

            start = time.perf_counter()
            async with anyio.create_task_group() as group:
                for conversation in conversations:
                    group.start_soon(one, conversation)
            elapsed = time.perf_counter() - start
            # The stream's own time: from the agent's first write to the last fragment read (the prompts before it,
            # one round trip per session, are left out; ``turns_per_s`` counts them).
            streamed = max(arrived for _, arrived, _ in seen) - min(stamp for stamp, _, _ in seen)
            held = sum(len(c.state.timeline[-1].text) for c in conversations)  # type: ignore[union-attr]
    assert sum(counts) == args.total, (sum(counts), args.total)
    delays = [(arrived - stamp, count) for stamp, arrived, count in seen if count]
    return {
        "sessions": sessions,
        "connections": connections,
        "total": args.total,
        "backend": args.backend,
        "updates_per_s": args.total / streamed,
        "with_prompts_updates_per_s": args.total / elapsed,
        "p50_delivery_ms": _weighted_quantile(delays, 0.50) * 1000,
        "p99_delivery_ms": _weighted_quantile(delays, 0.99) * 1000,
        "peak_rss_kib": peak_rss_kib(),
        "rss_before_stream_kib": rss_before,
        "text_held_bytes": held,
    }


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _weighted_quantile(samples: list[tuple[float, int]], q: float) -> float:
    ordered = sorted(samples)
    total = sum(count for _, count in ordered)
    seen = 0
    for value, count in ordered:
        seen += count
        if seen >= q * total:
            return value
    return ordered[-1][0] if ordered else 0.0


def measure(sessions: int, connections: int, total: int, backend: str, run: int, repeats: int) -> dict[str, Any]:
    """One row in fresh client processes, ``repeats`` times: the median rate and its run's other figures."""
    rows = []
    for _ in range(repeats):
        argv = [sys.executable, __file__, "--row", "--backend", backend, "--total", str(total), "--run", str(run)]
        argv += ["--sessions", str(sessions), "--connections", str(connections)]
        out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    rows.sort(key=lambda row: row["updates_per_s"])
    median = dict(rows[len(rows) // 2])
    median["rates"] = [row["updates_per_s"] for row in rows]
    median["p99_delivery_ms_median"] = statistics.median(row["p99_delivery_ms"] for row in rows)
    return median


def scaling_report(
    session_counts: list[int], connections: int, total: int, backend: str, run: int, repeats: int
) -> dict[str, Any]:
    """Every row, measured in alternating rounds (each round runs every row once) so that all see the same moments
    of the machine; the medians count. Plus the memory row at twice the total."""
    plan = [(s, 1, total) for s in session_counts]
    if connections > 1:
        plan.append((connections, connections, total))
    plan.append((max(session_counts), 1, 2 * total))
    samples: dict[tuple[int, int, int], list[dict[str, Any]]] = {key: [] for key in plan}
    for _ in range(repeats):
        for key in plan:
            samples[key].append(measure(key[0], key[1], key[2], backend, run, 1))
    rows = []
    for key in plan:
        ordered = sorted(samples[key], key=lambda row: row["updates_per_s"])
        row = dict(ordered[len(ordered) // 2])
        row["rates"] = [r["updates_per_s"] for r in ordered]
        row["p99_delivery_ms"] = statistics.median(r["p99_delivery_ms"] for r in ordered)
        row["peak_rss_kib"] = statistics.median(r["peak_rss_kib"] for r in ordered)
        rows.append(row)
    return {"backend": backend, "run": run, "rows": rows, "targets": scaling_targets(rows, total)}


def scaling_targets(rows: list[dict[str, Any]], total: int) -> dict[str, bool]:
    one = [r for r in rows if r["connections"] == 1 and r["total"] == total]
    base = next(r for r in one if r["sessions"] == min(x["sessions"] for x in one))
    out = {}
    for row in one:
        if row is not base:
            ratio = row["updates_per_s"] / base["updates_per_s"]
            out[
                f"scaling: {row['sessions']:,} sessions at >= {1 - FLAT_WITHIN:.0%} of 1 session's rate ({ratio:.2f}x)"
            ] = ratio >= 1 - FLAT_WITHIN
    linear = linear_memory(rows, total)
    if linear is not None:
        line = (
            f"scaling: memory linear in the text held (<= {MAX_BYTES_PER_TEXT_BYTE} B of RSS per byte; {linear:.1f} B)"
        )
        out[line] = linear <= MAX_BYTES_PER_TEXT_BYTE
    return out


def linear_memory(rows: list[dict[str, Any]], total: int) -> float | None:
    """At the most sessions: the client's peak RSS added per byte of text held, from the row at the total to the
    row at twice the total (the marginal cost; what the stream's buffers cost whatever its length cancels out)."""
    most = max(r["sessions"] for r in rows if r["connections"] == 1)
    at = [r for r in rows if r["connections"] == 1 and r["sessions"] == most]
    one = next((r for r in at if r["total"] == total), None)
    two = next((r for r in at if r["total"] == 2 * total), None)
    if one is None or two is None or two["text_held_bytes"] <= one["text_held_bytes"]:
        return None
    added = (two["peak_rss_kib"] - one["peak_rss_kib"]) * 1024
    return added / (two["text_held_bytes"] - one["text_held_bytes"])


def print_report(report: dict[str, Any]) -> None:
    print(f"\nscaling ({report['backend']}; sessions take turns {report['run']} chunks at a time)")
    print(
        f"  {'sessions x connections':<24} {'updates':>8} {'updates/s':>12} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'peak RSS':>9} {'before':>8} {'text held':>10}"
    )
    for row in report["rows"]:
        where = f"{row['sessions']:,} on 1" if row["connections"] == 1 else f"{row['connections']} x 1"
        print(
            f"  {where:<24} {row['total']:>8,} {row['updates_per_s']:>12,.0f} {row['p50_delivery_ms']:>8.1f} "
            f"{row['p99_delivery_ms']:>8.1f} {row['peak_rss_kib'] / 1024:>7.1f}Mi "
            f"{row['rss_before_stream_kib'] / 1024:>6.1f}Mi {row['text_held_bytes'] / 1e6:>8.1f}MB"
        )


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [
        r for r in report["rows"] if r["connections"] == 1 and r["total"] == min(x["total"] for x in report["rows"])
    ]
    rows.sort(key=lambda r: r["sessions"])
    xs = [r["sessions"] for r in rows]
    fig, (rate_ax, p99_ax, rss_ax) = plt.subplots(1, 3, figsize=(13, 4))
    rate_ax.plot(xs, [r["updates_per_s"] / 1000 for r in rows], "o-", label="one connection")
    base = rows[0]["updates_per_s"] / 1000
    rate_ax.axhspan(
        base * (1 - FLAT_WITHIN), base * (1 + FLAT_WITHIN), color="green", alpha=0.1, label="±20 % of 1 session"
    )
    many = [r for r in report["rows"] if r["connections"] > 1]
    for row in many:
        rate_ax.plot(
            [row["connections"]], [row["updates_per_s"] / 1000], "s", label=f"{row['connections']} connections"
        )
    rate_ax.set(
        xscale="log", xlabel="sessions streaming at once", ylabel="updates/s (thousands)", title="aggregate rate"
    )
    rate_ax.set_ylim(bottom=0)
    rate_ax.legend(fontsize=8)
    p99_ax.plot(xs, [r["p99_delivery_ms"] for r in rows], "o-", label="p99")
    p99_ax.plot(xs, [r["p50_delivery_ms"] for r in rows], "o--", label="p50")
    p99_ax.set(xscale="log", xlabel="sessions", ylabel="ms", title="time to deliver an update")
    p99_ax.legend(fontsize=8)
    rss_ax.plot(xs, [r["peak_rss_kib"] / 1024 for r in rows], "o-", label="peak RSS")
    rss_ax.plot(xs, [r["rss_before_stream_kib"] / 1024 for r in rows], "o--", label="RSS before the stream")
    rss_ax.set(xscale="log", xlabel="sessions", ylabel="MiB", title="client memory")
    rss_ax.set_ylim(bottom=0)
    rss_ax.legend(fontsize=8)
    fig.suptitle(f"acp-session, {rows[0]['total']:,} chunk updates over one connection ({report['backend']})")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 10, 100, 1000])
    parser.add_argument("--connections", type=int, default=100, help="also: this many connections of one session")
    parser.add_argument("--total", type=int, default=100_000, help="chunk updates in all, shared by the sessions")
    parser.add_argument("--run", type=int, default=16, help="chunks of one session in a row")
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    parser.add_argument("--repeats", type=int, default=3, help="alternating rounds; the median of each row counts")
    parser.add_argument(
        "--mode",
        default="iterate",
        choices=["iterate", "await"],
        help="iterate: a reader of each turn's events (the delivery times); await: chat_to_completion (rate only)",
    )
    parser.add_argument("--plot", type=Path, help="draw the curve (matplotlib, the bench extra) into this PNG")
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--row", action="store_true", help=argparse.SUPPRESS)  # one row, in this process
    args = parser.parse_args()
    if args.row:
        args.sessions = args.sessions[0]
        print(json.dumps(anyio.run(run_row, args, backend=args.backend)))
        return
    report = scaling_report(args.sessions, args.connections, args.total, args.backend, args.run, args.repeats)
    print_report(report)
    for line, met in report["targets"].items():
        print(f"  {'met    ' if met else 'NOT met'}  {line}")
    if args.plot:
        plot(report, args.plot)
        print(f"  plot: {args.plot}")
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
