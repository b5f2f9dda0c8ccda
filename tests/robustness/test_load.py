"""Load: a flood of chunk updates through a real pipe into a slow handler, 1 000 concurrent permission requests,
100 sessions on one connection.

The flood runs ``ACP_LOAD_UPDATES`` updates (default 100 000; ``make load`` runs 1 000 000) in a separate client
process (``load_client.py``) so its peak RSS can be measured.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.schema.types import RequestPermissionRequest

from .support import hostile, responses, wait_for_responses

ROOT = Path(__file__).parents[2]
UPDATES = int(os.environ.get("ACP_LOAD_UPDATES", "100000"))
SPIN_US = 10.0


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_flood_into_a_slow_handler(backend: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tests.robustness.load_client", str(UPDATES), backend, str(SPIN_US)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60 + UPDATES / 5000,
        check=True,
    )
    result = json.loads(out.stdout.splitlines()[-1])
    print(result)
    assert result["received"] == UPDATES
    assert result["complete_and_ordered"]  # nothing lost, order kept
    # The handler really is at least 10x slower than the producer's unthrottled speed ...
    assert result["handler_seconds"] >= 10 * result["agent_raw_seconds"]
    # ... so the producer was held back by the pipe (backpressure), not buffered by the client.
    assert result["agent_pipe_seconds"] >= 0.8 * result["handler_seconds"]
    assert 0 < result["rss_growth_mib"] < 64 + result["text_mib"]  # > 0: the measurement sees this process


@pytest.mark.anyio
async def test_thousand_concurrent_permission_requests(tmp_path: Path) -> None:
    async def on_permission(request: RequestPermissionRequest) -> str:
        await anyio.sleep(0.01)  # all of them are pending at the same time (up to the concurrency limit)
        return request.options[0].option_id

    builder = ClientBuilder("load", "1.0").on_request_permission(on_permission)
    config = {"after_new": [{"permissions": 1000}]}
    async with hostile(tmp_path, config, builder) as (_client, _session, _seen, log):
        await wait_for_responses(log, 1000, timeout=30)
    got = responses(log)
    assert sorted(m["id"] for m in got) == sorted(f"p{i}" for i in range(1000))
    assert all(m["result"] == {"outcome": {"outcome": "selected", "optionId": "yes"}} for m in got)


@pytest.mark.anyio
async def test_hundred_sessions_stay_isolated(tmp_path: Path) -> None:
    config = {"on_set_config": [{"spread": 20}, {"answer": {"configOptions": []}}]}
    async with hostile(tmp_path, config) as (client, first, seen, _log):
        sessions = [first] + [await client.new_session("/tmp") for _ in range(99)]
        await first.set_config_option("fast", True)  # the agent interleaves 20 chunks to each of the 100
        async with anyio.create_task_group() as tg:
            for session in sessions:
                tg.start_soon(session.close)
    assert len(seen.states) == 100
    for n in range(1, 101):
        message = seen.states[f"s{n}"].message("a1")
        assert message is not None and message.text == "".join(f"s{n}-c{i}" for i in range(20))
    assert len(seen.notes) == 2000
