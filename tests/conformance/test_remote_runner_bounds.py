"""``acp-conformance --url`` against a hostile server on 127.0.0.1 (issue 51, 17): its memory does not grow with
connections x messages. The server floods 100 000 notifications on every connection's event stream (the runner
grew to 506 MiB), or answers ``initialize`` with a 2 GiB body (429 MiB and more); the runner runs as a subprocess
of its own, whose peak RSS (the address space's high-water mark, read as it exits) must stay under 100 MiB."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import ByteStream

from tests.remote.hostile import Request, Served, initialize_answer, send, serve

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
FLOOD = 100_000
EVENTS_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"
ACCEPTED = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
CHECKS = ["initialize", "session-new", "session-list", "prompt-accepted", "http-initialize", "http-connection-stream"]

# The runner, reporting its own peak RSS on its way out (VmHWM: ru_maxrss would carry pytest's over the exec).
LAUNCH = r"""
import atexit, runpy, sys
def peak():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                sys.stderr.write(f"PEAK_KIB {line.split()[1]}\n")
atexit.register(peak)
sys.argv = ["acp-conformance", *sys.argv[1:]]
runpy.run_module("acp_conformance.runner", run_name="__main__")
"""


async def _run_runner(url: str, checks: list[str]) -> tuple[float, dict[str, Any]]:
    """The runner's peak RSS in MiB and its JSON report."""
    argv = [sys.executable, "-c", LAUNCH, "--url", url, "--json", "--timeout", "3"]
    argv += [arg for check in checks for arg in ("--check", check)]
    done = await anyio.run_process(argv, check=False, cwd=ROOT)
    stderr = done.stderr.decode(errors="replace")
    peaks = [int(line.split()[1]) for line in stderr.splitlines() if line.startswith("PEAK_KIB ")]
    assert peaks, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    return peaks[0] / 1024, json.loads(done.stdout)


def flooding_server() -> Any:
    """Answers initialize (a new connection id each time), floods each connection's event stream, then answers
    the requests POSTed for it (``session/new`` with a session, anything else -32601)."""
    numbers = itertools.count()
    pending: dict[str, list[dict[str, Any]]] = {}
    chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text", "text": "flood"}}
    note = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s-flood", "update": chunk}}
    events = (b"data: " + json.dumps(note).encode() + b"\n\n") * 1000

    async def handle(stream: ByteStream, request: Request, served: Served, _: bytearray) -> bool:
        connection = request.headers.get("acp-connection-id", "")
        if request.method == "POST":
            message = request.json()
            if isinstance(message, dict) and message.get("method") == "initialize":
                connection = f"c{next(numbers)}"
                pending[connection] = []
                await send(stream, served, initialize_answer(request, connection))
                return True
            if isinstance(message, dict) and "method" in message and "id" in message and connection in pending:
                pending[connection].append(message)
            await send(stream, served, ACCEPTED)
            return True
        if request.method != "GET":
            await send(stream, served, ACCEPTED)
            return True
        await send(stream, served, EVENTS_HEAD)
        if "acp-session-id" not in request.headers:
            for _ in range(FLOOD // 1000):
                await send(stream, served, events)
        while True:
            queue = pending.get(connection, [])
            while queue:
                asked = queue.pop(0)
                if asked["method"] == "session/new":
                    answer: dict[str, Any] = {"id": asked["id"], "result": {"sessionId": f"s{next(numbers)}"}}
                else:
                    answer = {"id": asked["id"], "error": {"code": -32601, "message": "no"}}
                await send(stream, served, b"data: " + json.dumps({"jsonrpc": "2.0", **answer}).encode() + b"\n\n")
            await anyio.sleep(0.05)

    return handle


async def test_a_hundred_thousand_notifications_per_connection_keep_the_runner_under_100_mib() -> None:
    async with serve(flooding_server()) as served:
        with anyio.fail_after(300):
            peak, report = await _run_runner(served.url, CHECKS)
    assert served.sent > 3 * FLOOD * 100  # several connections were flooded
    statuses = {c["id"]: c["status"] for c in report["checks"]}
    assert statuses["initialize"] == "PASS" and statuses["session-new"] == "PASS", statuses  # answers got through
    assert peak < 100, f"the runner peaked at {peak:.0f} MiB"
    tails = [line for c in report["checks"] for line in c.get("stderrTail") or []]
    assert any("more of its own were counted, not kept" in line for line in tails), tails


async def test_two_gibibyte_answers_keep_the_runner_under_100_mib() -> None:
    size = 2 * 1024**3
    head = b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"big","version":"1"},"pad":"'

    async def huge(stream: ByteStream, request: Request, served: Served, _: bytearray) -> bool:
        await send(stream, served, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        await send(stream, served, b"Acp-Connection-Id: big\r\nContent-Length: %d\r\n\r\n" % size + head)
        block = b"x" * (1024 * 1024)
        for _ in range(size // len(block) - 1):
            await send(stream, served, block)
        return False

    async with serve(huge) as served:
        with anyio.fail_after(300):
            peak, report = await _run_runner(served.url, ["initialize", "http-initialize", "http-accepted"])
    assert served.sent > 64 * 1024 * 1024  # the server got to send more than the runner keeps
    statuses = {c["id"]: c["status"] for c in report["checks"]}
    assert statuses["initialize"] == "FAIL" and statuses["http-initialize"] == "FAIL", statuses
    assert peak < 100, f"the runner peaked at {peak:.0f} MiB"


async def test_two_gibibyte_answers_to_delete_keep_the_runner_under_100_mib() -> None:
    """A server answering every ``DELETE`` (each connection's last request, the library transport's and the raw
    probes' alike) with a 2 GiB body: its status is read, not the body."""
    size = 2 * 1024**3
    numbers = itertools.count()

    async def huge_delete(stream: ByteStream, request: Request, served: Served, _: bytearray) -> bool:
        if request.method == "POST" and request.json().get("method") == "initialize":
            await send(stream, served, initialize_answer(request, f"c{next(numbers)}"))
            return True
        if request.method == "GET":
            await send(stream, served, EVENTS_HEAD)
            await anyio.sleep(30)
            return False
        if request.method != "DELETE":
            await send(stream, served, ACCEPTED)
            return True
        await send(stream, served, b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
        block = b"x" * (1024 * 1024)
        for _ in range(size // len(block)):
            await send(stream, served, block)
        return False

    async with serve(huge_delete) as served:
        with anyio.fail_after(300):
            peak, report = await _run_runner(served.url, ["initialize", "version-negotiation", "http-initialize"])
    assert [r.method for r in served.requests].count("DELETE") >= 3
    assert {c["id"]: c["status"] for c in report["checks"]}["initialize"] == "PASS"
    assert peak < 100, f"the runner peaked at {peak:.0f} MiB"
