"""What a hostile or chatty agent can make the client hold: memory kept after one turn, per scenario.

Each scenario runs one agent subprocess (an inline Python script speaking ACP v2, newline-delimited JSON-RPC over
real pipes) and one client, in a fresh process of this script (``--scenario NAME``), so no scenario sees another's
heap, caches or freed-but-kept arenas. The parent runs them one after another and prints the table.

What is measured, and why this way:

* ``tracemalloc`` in the client process only (the agent is another process and not counted). Tracing starts
  after ``initialize``, ``session/new`` and a small warm-up turn of the same kind (so codec decoders, interned
  names and other one-off caches exist already) and after ``gc.collect()``; it covers exactly one measured turn.
* retained: bytes allocated during the turn that are still alive after it and ``gc.collect()``. The turn's
  ``ChatResponse`` is kept referenced while measuring (an application keeps it; the conversation keeps its last
  one anyway), as are the conversation and the connection. Memory allocated before tracing and freed during the
  turn (e.g. warm-up entries trimmed away) does not count against it, so the figure is what the turn added.
* peak growth: the highest traced total during the turn (decoded notes, queued events, garbage not collected yet).
* What Python's allocators hand out (objects, strings, msgspec's structs and buffers): the allocator's arena slack,
  fragmentation and pages the OS keeps are not seen. RSS would include them, mixed with the interpreter's own
  noise; tracemalloc gives exact live bytes per site (``--top K`` prints the largest sites of each run).
* tracemalloc slows the client several times; these runs are for memory, not speed (see ``compare.py``).

Scenarios (N = 100 000, ``--quick`` 10 000; the stream 1 000 000 chunks, ``--quick`` 100 000):

1. ``unknown``: N updates, each naming a different session id nobody opened (after ``session/new``, during the
   turn), then the reply. Target: retained < the 10 000-entry history (``reference``, below).
2. ``tool_calls``: N distinct tool call ids in one turn (each reported once, completed), folded by a
   ``Conversation`` with the default ``max_history_size`` (10 000), the turn awaited (``chat_to_completion``).
   ``tool_calls_iterated`` (2i): the same flood read as a UI would, ``async for`` over the turn's events; its peak
   is printed beside the peak of the same at 10 000 (the events a reader has not taken yet are queued), no target.
3. ``message_ids``: N agent messages in one turn, each one chunk of 6-10 characters with its own ``messageId``.
4. ``cancellable``: N tool calls, ``in_progress`` with ``capabilities: {"cancel": {}}``, that never finish; the
   agent stays running. Measured while the turn still runs (what such an agent can keep the client holding; the
   client polls the fold for the agent's "waiting" message, so no extra listener changes the update path), then
   after ``Conversation.cancel()`` and the agent's idle.
5. ``stream``: one agent message streamed as M chunks of 6-10 characters (token-sized), awaited with
   ``chat_to_completion``: retained and peak beside the text size (the response's ``text`` is part of what is
   retained). Target: retained at most 3-4x the text (checked as <= 4x); the peak has no target.

6. ``answers_files`` / ``answers_terminal`` (a second table): a protocol-v1 agent
   (``tests/robustness/agents/v1_requests_agent.py``) asks for many large answers at once and reads none of them
   for a second: 48 concurrent ``fs/read_text_file`` of a 16 MiB text file, 24 of a 4 MiB file of 0x01 bytes
   (6x larger as JSON) and 100 ``terminal/output`` of 1 MiB of 0x01 output (``--quick``: a quarter of the
   counts). Measured as the client process's peak RSS growth (VmHWM) during that turn, beside the bytes
   requested and the encoded answers the agent read. Target: at most ``ANSWER_CAP_FACTOR`` (2) x (the answer budget,
   ``Limits.answer_bytes``, 64 MiB, + the largest single answer), whatever the agent asks (before the budget:
   1.5 GiB, 792 MiB and 639 MiB).

For 2-4 the target is "bounded by the history limit": retained at N at most 1.5x what the same flood retains at
N = 10 000 (the history limit). Not 1x: the history is trimmed in batches of 1/8 of the limit (it can hold 11 250
entries), and the dicts and sets that had entries removed (the fold's id maps, a turn's steps and open tool calls)
keep their larger tables, up to twice the size. Growth with N shows as far more (N = 100 000 is 10x the limit).
With N not above the limit (``--quick``), boundedness cannot be shown and is reported as n/a.
``reference`` is scenario 3 at 10 000 messages: "the 10 000-entry history" (its 10 000 messages and the prompt,
with the turn's response).

Exit code 0 whether targets are met or not (a report, not a test); 1 only if a scenario could not run.

Run: .venv/bin/python benchmarks/memory.py [--quick] [--json] [--backend asyncio|trio] [--top K]
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from acp_session import ClientBuilder, Limits
from acp_session.client.connection import hub_of
from acp_session.conversation import DEFAULT_MAX_HISTORY, ChatDone, Conversation

AGENT = r"""
import json, sys

mode, count, warm_count, base = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
out = sys.stdout.buffer
NOTE = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":%s}}\n'
CHUNK = '{"sessionUpdate":"agent_message_chunk","messageId":"%s","content":{"type":"text","text":"%s"}}'
TOOL = '{"sessionUpdate":"tool_call_update","toolCallId":"%s","title":"Read file","kind":"read","status":"%s"%s}'
CANCEL = ',"capabilities":{"cancel":{}}'
RUNNING = '{"sessionUpdate":"state_update","state":"running"}'
IDLE = '{"sessionUpdate":"state_update","state":"idle","stopReason":"%s"}'

def token(i):  # 6 to 10 characters, like one streamed token or a few
    return f" w{i:09d}"[: 6 + i % 5]

def write(lines):
    batch = []
    for line in lines:
        batch.append(line)
        if len(batch) == 4096:
            out.write("".join(batch).encode())
            batch.clear()
    out.write("".join(batch).encode())
    out.flush()

def answer(rid, result):
    write([json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n"])

def flood(prefix, n):
    if mode == "unknown":
        return (NOTE % ("%s%d" % (prefix, i), CHUNK % ("m", "x")) for i in range(n))
    if mode == "tool_calls":
        return (NOTE % ("s", TOOL % ("%s%d" % (prefix, i), "completed", "")) for i in range(n))
    if mode == "cancellable":
        return (NOTE % ("s", TOOL % ("%s%d" % (prefix, i), "in_progress", CANCEL)) for i in range(n))
    if mode == "message_ids":
        return (NOTE % ("s", CHUNK % ("%s%d" % (prefix, i), token(i))) for i in range(n))
    return (NOTE % ("s", CHUNK % (prefix, token(i))) for i in range(n))  # stream: one message

turn = 0
for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        info = {"name": "memory-bench", "version": "1"}
        answer(rid, {"protocolVersion": 2, "info": info, "capabilities": {"session": {}}})
    elif method == "session/new":
        answer(rid, {"sessionId": "s"})
    elif method == "session/prompt":
        turn += 1
        prefix, n = ("w" + base, warm_count) if turn == 1 else (base, count)
        user = {"sessionUpdate": "user_message", "messageId": "u%d" % turn, "content": msg["params"]["prompt"]}
        answer(rid, {"messageId": "u%d" % turn})
        write([NOTE % ("s", json.dumps(user)), NOTE % ("s", RUNNING)])
        write(flood(prefix, n))
        if mode == "cancellable":  # stays running until session/cancel
            write([NOTE % ("s", CHUNK % ("waiting%d" % turn, "waiting"))])
            continue
        tail = [] if mode in ("message_ids", "stream") else [NOTE % ("s", CHUNK % ("done%d" % turn, "done"))]
        write([*tail, NOTE % ("s", IDLE % "end_turn")])
    elif method == "session/cancel":
        write([NOTE % ("s", IDLE % "cancelled")])
"""

SCENARIOS = ("unknown", "tool_calls", "tool_calls_iterated", "message_ids", "cancellable", "stream")
ANSWER_SCENARIOS = ("answers_text_files", "answers_files", "answers_terminal")
REQUESTS_AGENT = Path(__file__).resolve().parent.parent / "tests" / "robustness" / "agents" / "v1_requests_agent.py"
ANSWER_CAP_FACTOR = 2
"""Peak RSS growth while large answers are in flight: at most this times (the answer budget + the largest single
answer). The budget counts the encoded frames in flight; one more may be being built past it (a single answer larger
than the budget goes alone), and the text it is built from, the encoder's growing buffer, the copy being written
and the allocator's slack come on top."""
ANSWER_PAUSE = 1.0  # seconds the agent reads nothing after asking: whatever the client builds meanwhile piles up
ANSWER_LOADS = {  # scenario: (requests, bytes each, byte the content is made of), the sizes
    "answers_text_files": (48, 16 << 20, b"x"),
    "answers_files": (24, 4 << 20, b"\x01"),
    "answers_terminal": (100, 1 << 20, b"\x01"),
}
AGENT_MODE = {"tool_calls_iterated": "tool_calls"}  # the agent's flood, where the scenario's name is not it
ID_BASE = {"unknown": "ghost-", "tool_calls": "call-", "message_ids": "msg-", "cancellable": "call-", "stream": "r"}
WARM_COUNT = 20
MiB = 1 << 20
ANSWER_LABELS = {
    "answers_text_files": "6a. concurrent fs/read_text_file, a text file",
    "answers_files": "6b. concurrent fs/read_text_file, 0x01 bytes",
    "answers_terminal": "6c. concurrent terminal/output, 0x01 bytes",
}
BOUND_SLACK = 1.5
STREAM_TARGET = 4.0


def token(i: int) -> str:
    """The agent's chunk text number ``i`` (the same function as in ``AGENT``)."""
    return f" w{i:09d}"[: 6 + i % 5]


def ids_bytes(base: str, n: int) -> int:
    return sum(len(f"{base}{i}") for i in range(n))


# ---------------------------------------------------------------------------------------------- one scenario


class Meter:
    """tracemalloc around the measured turn; ``probe`` records a mid-turn figure (after a collection)."""

    def __init__(self, top: int) -> None:
        self.top = top
        self.sites: dict[str, list[tuple[str, int]]] = {}

    def start(self) -> None:
        gc.collect()
        tracemalloc.start()

    def probe(self, label: str) -> int:
        gc.collect()
        current = tracemalloc.get_traced_memory()[0]
        if self.top:
            self.sites[label] = top_sites(self.top)
        return current

    def stop(self) -> tuple[int, int]:
        gc.collect()
        retained, peak = tracemalloc.get_traced_memory()
        if self.top:
            self.sites["retained"] = top_sites(self.top)
        tracemalloc.stop()
        return retained, peak


def top_sites(k: int) -> list[tuple[str, int]]:
    snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    root = str(Path(__file__).resolve().parent.parent) + "/"
    out = []
    for stat in snapshot.statistics("lineno")[:k]:
        frame = stat.traceback[0]
        out.append((f"{frame.filename.removeprefix(root)}:{frame.lineno}", stat.size))
    return out


async def awaited_turn(conversation: Conversation, name: str, number: int, probe: Callable[[], None]) -> Any:
    """The turn awaited (no events queued for a reader); for ``cancellable``, probed and cancelled once the agent
    says it is waiting (every tool call reported: a poll of the fold, so no extra listener changes its path)."""
    if name != "cancellable":
        return await conversation.chat_to_completion("go")
    turn = conversation.chat("start the tools")
    turn.keep_no_events()  # as chat_to_completion's turn: awaited, not iterated
    responses: list[Any] = []

    async def wait() -> None:
        responses.append(await turn)

    async with anyio.create_task_group() as tg:
        tg.start_soon(wait)
        while conversation.state.message(f"waiting{number}") is None:
            await anyio.sleep(0.005)
        probe()
        await conversation.cancel()
    return responses[0]


async def iterated_turn(conversation: Conversation) -> Any:
    """The turn read as an application showing it would: ``async for`` over its events."""
    response = None
    async for event in conversation.chat("go"):
        if isinstance(event, ChatDone):
            response = event.response
    return response


def answer_cap(run: dict[str, Any]) -> float:
    """The documented bound on a run's peak RSS growth (``ANSWER_CAP_FACTOR``)."""
    return float(ANSWER_CAP_FACTOR * (run["budget"] + run["largest_answer"]))


def peak_rss() -> int:
    """This process's peak RSS in bytes (VmHWM: unlike ``ru_maxrss`` it does not carry a forking parent's peak)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def answer_steps(name: str, count: int, size: int, content: bytes, tmp: str) -> list[dict[str, Any]]:
    """The agent's script: setup prompts, then the measured one (its requests all at once, then a pause)."""
    if name != "answers_terminal":
        path = Path(tmp) / "big.txt"
        path.write_bytes(content * size)
        read = {"method": "fs/read_text_file", "params": {"sessionId": "s1", "path": str(path)}, "count": count}
        return [{"send": [read], "pause": ANSWER_PAUSE, "wait": count}]
    program = f"import sys; sys.stdout.buffer.write({content!r} * {size})"
    create = {"sessionId": "s1", "command": sys.executable, "args": ["-c", program]}
    terminal = {"sessionId": "s1", "terminalId": "$terminal"}
    output = {"method": "terminal/output", "params": terminal, "count": count}
    return [
        {"send": [{"method": "terminal/create", "params": create}], "wait": 1},
        {"send": [{"method": "terminal/wait_for_exit", "params": terminal}], "wait": 1},
        {"send": [output], "pause": ANSWER_PAUSE, "wait": count},
    ]


async def run_answers(name: str, count: int, size: int, budget: int) -> dict[str, Any]:
    """Peak RSS growth of this process while the agent's ``count`` requests for ``size``-byte answers are in flight."""
    content = ANSWER_LOADS[name][2]
    with tempfile.TemporaryDirectory() as tmp, anyio.fail_after(600):
        builder = ClientBuilder("memory-bench", "1").limits(answer_bytes=budget)
        builder.with_file_system(write=False, max_read_bytes=max(size, 1 << 20))
        builder.with_terminals(output_byte_limit=size)
        steps = answer_steps(name, count, size, content, tmp)
        log = Path(tmp) / "agent.log"
        argv = [sys.executable, str(REQUESTS_AGENT), str(log), json.dumps({"prompts": steps})]
        async with builder.spawn(argv) as client:
            session = await client.new_session(tmp)
            for _ in steps[:-1]:
                await session.send_prompt("set up")
            gc.collect()
            before = peak_rss()
            started = time.perf_counter()
            await session.send_prompt("go")
            seconds = time.perf_counter() - started
            growth = peak_rss() - before
        read = [json.loads(line) for line in log.read_text().splitlines()]
        answers = [entry["size"] for entry in read if "size" in entry]
    return {
        "scenario": name,
        "requests": count,
        "bytes_requested": count * size,
        "answers": len(answers),
        "answer_bytes": sum(answers),
        "largest_answer": max(answers, default=0),
        "budget": budget,
        "rss_growth": growth,
        "seconds": seconds,
    }


async def run_scenario(name: str, n: int, top: int) -> dict[str, Any]:
    meter = Meter(top)
    extra: dict[str, Any] = {}
    mode = AGENT_MODE.get(name, name)
    with tempfile.TemporaryDirectory() as tmp, anyio.fail_after(1500):
        script = Path(tmp) / "agent.py"
        script.write_text(AGENT)
        argv = [sys.executable, str(script), mode, str(n), str(WARM_COUNT), ID_BASE[mode]]
        async with ClientBuilder("memory-bench", "1").spawn(argv) as client:
            conversation = await client.start_conversation(tmp)
            track = conversation.session.track

            def probe() -> None:
                if tracemalloc.is_tracing():
                    extra["held_while_running"] = meter.probe("running")
                    extra["cancellable_ids_while_running"] = len(track.cancellable_tool_calls)

            async def one_turn(number: int) -> Any:
                if name == "tool_calls_iterated":
                    return await iterated_turn(conversation)
                return await awaited_turn(conversation, name, number, probe)

            await one_turn(1)  # warm-up: the same code paths, WARM_COUNT items
            meter.start()
            started = time.perf_counter()
            response = await one_turn(2)
            seconds = time.perf_counter() - started
            retained, peak = meter.stop()
            result: dict[str, Any] = {
                "scenario": name,
                "n": n,
                "retained": retained,
                "peak": peak,
                "seconds": seconds,
                "history_entries": len(conversation.history()),
                "response_steps": len(response.steps),
                "response_tool_calls": len(response.tool_calls),
                "response_text": len(response.text),
                "cancellable_ids_after": len(track.cancellable_tool_calls),
                "unknown_session_updates": client.unknown_session_updates,
                "session_records": len(hub_of(client).session_tracks),
                **extra,
            }
            if mode == "stream":
                text = sum(len(token(i)) for i in range(n))
                assert len(response.text) == text, (len(response.text), text)  # every chunk arrived
                result["text_bytes"] = text
            else:
                result["ids_bytes"] = ids_bytes(ID_BASE[mode], n)
            if top:
                result["sites"] = meter.sites
    return result


# ---------------------------------------------------------------------------------------------- the report


def run_child(name: str, n: int, args: argparse.Namespace) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--scenario", name, "--n", str(n), "--backend", args.backend]
    if args.top:
        argv += ["--top", str(args.top)]
    if name in ANSWER_SCENARIOS:
        argv += ["--budget", str(args.budget)]
        if args.answer_size is not None:
            argv += ["--answer-size", str(args.answer_size)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"scenario {name} (n={n}) failed:\n{done.stderr.strip()}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def mib(size: float) -> str:
    return f"{size / MiB:.2f} MiB"


def count(n: int) -> str:
    return f"{n:,}".replace(",", " ")


def build_report(args: argparse.Namespace) -> dict[str, Any]:
    n, chunks, limit = args.n, args.chunks, DEFAULT_MAX_HISTORY
    runs: dict[str, dict[str, Any]] = {}
    reference_n = min(n, limit)
    runs["reference"] = run_child("message_ids", reference_n, args)
    for name in ("unknown", "tool_calls", "tool_calls_iterated", "message_ids", "cancellable"):
        if name == "message_ids" and n == reference_n:
            runs[name] = runs["reference"]
        else:
            runs[name] = run_child(name, n, args)
        if name != "unknown" and n > limit:
            runs[f"{name}@limit"] = runs["reference"] if name == "message_ids" else run_child(name, limit, args)
    runs["stream"] = run_child("stream", chunks, args)

    history = runs["reference"]["retained"]
    rows: list[dict[str, Any]] = []

    def bounded(label: str, run: dict[str, Any], key: str, at_limit: dict[str, Any] | None) -> None:
        """A row whose figure ``key`` should not grow past what the same flood gives at the history limit."""
        value = run[key]
        row: dict[str, Any] = {"scenario": label, "size": f"{count(run['n'])} ids, {mib(run['ids_bytes'])} of id text"}
        row.update(retained=value, peak=run["peak"], target=f"<= {BOUND_SLACK}x the same flood at N = {count(limit)}")
        if at_limit is None:
            row.update(ratio=None, met=None, note=f"N <= {count(limit)}: boundedness not shown")
        else:
            ratio = value / max(at_limit[key], 1)
            text = f"{ratio:.2f}x of {mib(at_limit[key])}"
            if label.startswith("2i"):  # the peak of a reader of events: reported, no target
                text += f"; peak {run['peak'] / max(at_limit['peak'], 1):.1f}x of {mib(at_limit['peak'])}"
            row.update(ratio=ratio, ratio_text=text, met=ratio <= BOUND_SLACK)
        rows.append(row)

    unknown = runs["unknown"]
    ratio = unknown["retained"] / max(history, 1)
    rows.append(
        {
            "scenario": "1. updates for unknown session ids",
            "size": f"{count(n)} ids, {mib(unknown['ids_bytes'])} of id text",
            "retained": unknown["retained"],
            "peak": unknown["peak"],
            "ratio": ratio,
            "ratio_text": f"{ratio:.3f}x the history",
            "target": f"< the {count(reference_n + 1)}-entry history",
            "met": unknown["retained"] < history,
        }
    )
    bounded("2. distinct tool call ids, one turn", runs["tool_calls"], "retained", runs.get("tool_calls@limit"))
    iterated, iterated_limit = runs["tool_calls_iterated"], runs.get("tool_calls_iterated@limit")
    bounded("2i. the same, its events read with async for", iterated, "retained", iterated_limit)
    bounded("3. distinct message ids, one turn", runs["message_ids"], "retained", runs.get("message_ids@limit"))
    cancel_limit = runs.get("cancellable@limit")
    bounded("4. cancellable tool calls, turn running", runs["cancellable"], "held_while_running", cancel_limit)
    bounded("4. the same after cancel and idle", runs["cancellable"], "retained", cancel_limit)
    stream = runs["stream"]
    text = stream["text_bytes"]
    rows.append(
        {
            "scenario": "5. one streamed message",
            "size": f"{count(chunks)} chunks, {mib(text)} of text",
            "retained": stream["retained"],
            "peak": stream["peak"],
            "ratio": stream["retained"] / text,
            "ratio_text": f"{stream['retained'] / text:.1f}x text (peak {stream['peak'] / text:.1f}x)",
            "target": f"retained <= 3-4x the text (checked: <= {STREAM_TARGET:g}x)",
            "met": stream["retained"] <= STREAM_TARGET * text,
        }
    )
    answer_rows = []
    for name in ANSWER_SCENARIOS:
        requests = ANSWER_LOADS[name][0]
        if args.quick:
            requests = max(requests // 4, 2)
        run = runs[name] = run_child(name, requests if args.answer_size is None else 4, args)
        cap = answer_cap(run)
        answer_rows.append(
            {
                "scenario": ANSWER_LABELS[name],
                "size": f"{run['requests']} x {mib(run['bytes_requested'] / run['requests'])}",
                "bytes_requested": run["bytes_requested"],
                "answer_bytes": run["answer_bytes"],
                "peak": run["rss_growth"],
                "cap": cap,
                "target": f"<= {ANSWER_CAP_FACTOR:g}x (budget + largest answer) = {mib(cap)}",
                "met": run["answers"] == run["requests"] and run["rss_growth"] <= cap,
            }
        )
    return {
        "backend": args.backend,
        "n": n,
        "chunks": chunks,
        "answer_rows": answer_rows,
        "history_limit": limit,
        "reference_history": {"entries": reference_n + 1, "retained": history},
        "rows": rows,
        "runs": runs,
    }


def print_report(report: dict[str, Any]) -> None:
    n, chunks = report["n"], report["chunks"]
    print(
        f"acp-session memory held by the client, tracemalloc ({report['backend']}; N = {count(n)}, "
        f"stream of {count(chunks)} chunks; history limit {count(report['history_limit'])})"
    )
    reference = report["reference_history"]
    print(
        f"reference: the {count(reference['entries'])}-entry history (one turn of agent messages of 6-10 characters, "
        f"and its response) holds {mib(reference['retained'])}"
    )
    print()
    print("| scenario | size involved | retained | peak growth | ratio | target | met |")
    print("|---|---|---|---|---|---|---|")
    for row in report["rows"]:
        met = {True: "yes", False: "**no**", None: "n/a"}[row["met"]]
        ratio = row.get("ratio_text") or row.get("note", "")
        retained, peak = mib(row["retained"]), mib(row["peak"])
        print(f"| {row['scenario']} | {row['size']} | {retained} | {peak} | {ratio} | {row['target']} | {met} |")
    runs = report["runs"]
    cancellable = runs["cancellable"]
    print()
    print(
        f"unknown: {count(runs['unknown']['unknown_session_updates'])} updates counted, "
        f"{runs['unknown']['session_records']} session record(s) kept"
    )
    for name in ("tool_calls", "tool_calls_iterated", "message_ids", "cancellable"):
        run = runs[name]
        print(
            f"{name}: history {count(run['history_entries'])} entries; response {count(run['response_steps'])} "
            f"steps, {count(run['response_tool_calls'])} tool calls; {run['seconds']:.1f} s traced"
        )
    print(
        f"cancellable: {count(cancellable.get('cancellable_ids_while_running', 0))} ids cancellable while running, "
        f"{cancellable['cancellable_ids_after']} after idle"
    )
    stream = runs["stream"]
    print(f"stream: {count(stream['response_text'])} characters in the response; {stream['seconds']:.1f} s traced")
    print()
    print(f"answers in flight, peak RSS growth of the client (answer budget {mib(runs['answers_files']['budget'])}):")
    print()
    print("| scenario | requests | bytes requested | encoded answers | peak RSS growth | target | met |")
    print("|---|---|---|---|---|---|---|")
    for row in report["answer_rows"]:
        met = "yes" if row["met"] else "**no**"
        requested, answers, peak = mib(row["bytes_requested"]), mib(row["answer_bytes"]), mib(row["peak"])
        print(f"| {row['scenario']} | {row['size']} | {requested} | {answers} | {peak} | {row['target']} | {met} |")
    for name, run in runs.items():
        for label, sites in run.get("sites", {}).items():
            print(f"\ntop allocation sites, {name} ({label}):")
            for site, size in sites:
                print(f"  {size / MiB:8.2f} MiB  {site}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 10 000, a stream of 100 000 chunks")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    parser.add_argument(
        "--top",
        type=int,
        default=0,
        help="also print the K largest allocation sites of each run (the snapshots add to peaks)",
    )
    parser.add_argument("--n", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--chunks", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--scenario", choices=SCENARIOS + ANSWER_SCENARIOS, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--answer-size", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--budget", type=int, default=Limits().answer_bytes, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.n is None:
        args.n = 10_000 if args.quick else 100_000
    if args.chunks is None:
        args.chunks = 100_000 if args.quick else 1_000_000
    if args.scenario in ANSWER_SCENARIOS:  # a child: N requests of the scenario's size (or --answer-size)
        size = args.answer_size or ANSWER_LOADS[args.scenario][1]
        answers = anyio.run(run_answers, args.scenario, args.n, size, args.budget, backend=args.backend)
        print(json.dumps(answers))
        return
    if args.scenario is not None:  # a child: one scenario, one JSON line
        result = anyio.run(run_scenario, args.scenario, args.n, args.top, backend=args.backend)
        print(json.dumps(result))
        return
    try:
        report = build_report(args)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
    if args.json:
        print(json.dumps(report))
    else:
        print_report(report)


if __name__ == "__main__":
    main()
