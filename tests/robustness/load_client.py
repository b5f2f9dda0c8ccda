"""The client side of the load test, run in its own process so its peak RSS can be measured.

usage: python -m tests.robustness.load_client COUNT BACKEND SPIN_US. Prints one JSON object: what arrived, whether
it was complete and in order, the client's peak RSS growth, and the agent's timings.
"""

from __future__ import annotations

import io
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from acp_session import ClientBuilder
from acp_session.schema.types import AgentMessageChunk, TextContent, UpdateSessionNotification

AGENT = Path(__file__).parent / "agents" / "flood_agent.py"


def peak_rss_mib() -> float:
    """This process's own peak RSS. ``ru_maxrss`` carries the forking parent's (pytest's) peak over exec on
    Linux, which hid any growth here; the address space's own high-water mark (VmHWM) does not."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


async def run(count: int, spin_us: float) -> dict[str, Any]:
    kept = io.StringIO()  # the text an editor keeps: its size is excluded from the growth budget
    received = 0
    handler_seconds = 0.0
    done = anyio.Event()
    spin = spin_us / 1e6

    def on_update(note: UpdateSessionNotification) -> None:
        nonlocal received, handler_seconds
        start = time.perf_counter()
        update = note.update
        assert isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContent)
        if update.message_id == "marker":
            done.set()
            return
        kept.write(update.content.text)
        received += 1
        while time.perf_counter() - start < spin:  # a handler much slower than the producer
            pass
        handler_seconds += time.perf_counter() - start

    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "agent.json"
        builder = ClientBuilder("load", "1.0").on_session_update(on_update)
        async with builder.spawn([sys.executable, str(AGENT), str(report), str(count)]) as client:
            session = await client.new_session("/tmp")
            baseline = peak_rss_mib()
            started = time.perf_counter()
            await session.send_prompt("go")
            await done.wait()
            elapsed = time.perf_counter() - started
            growth = peak_rss_mib() - baseline
        agent = json.loads(report.read_text())
    text = kept.getvalue()
    expected = "".join(f"c{i}" for i in range(count))
    return {
        "count": count,
        "received": received,
        "complete_and_ordered": text == expected,
        "text_mib": len(text) / 2**20,
        "rss_growth_mib": growth,
        "client_seconds": elapsed,
        "handler_seconds": handler_seconds,
        "agent_raw_seconds": agent["raw_seconds"],
        "agent_pipe_seconds": agent["pipe_seconds"],
    }


def main() -> None:
    count, backend, spin_us = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    result = anyio.run(run, count, spin_us, backend=backend)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
