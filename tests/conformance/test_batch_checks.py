"""The v2 batch checks judge only what answers a batch: the agent's own notifications and requests, and its answers
to the runner's other requests, that arrive meanwhile (a turn still running in a session an earlier check left on
the shared process) are no answer to it."""

from __future__ import annotations

import sys
import tempfile

import pytest

from acp_conformance.runner.checks.v2.transport import batch_notifications, batch_requests
from acp_conformance.runner.probe import spawn_probe
from acp_conformance.runner.registry import CheckContext
from acp_conformance.runner.scenarios import REFERENCE_SCENARIOS, load_scenarios

AGENT = [sys.executable, "-m", "acp_conformance.agent"]


@pytest.mark.anyio
async def test_a_turn_running_beside_a_batch_is_not_its_answer() -> None:
    with tempfile.TemporaryDirectory() as cwd:
        async with spawn_probe(AGENT, timeout=10) as probe:
            await probe.initialize(2)
            ctx = CheckContext(probe, cwd, load_scenarios(REFERENCE_SCENARIOS), wait=5.0)
            session_id = await probe.new_session(cwd)
            for check in (batch_notifications, batch_requests):
                start = probe.mark
                prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hello"}]}
                await probe.request("session/prompt", prompt)  # answered, and its turn reported, meanwhile
                assert await check(ctx) is None
                assert probe.find(probe.is_update(session_id), start)  # the turn did report beside the batch
                await probe.barrier()
