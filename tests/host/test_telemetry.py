"""``HostOptions(instrument=True)`` (``acp-session serve --otel``): the host's turns through it are OpenTelemetry
spans (the library's client instrumentation on the host's connection to the agent), on both backends."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import httpx
import pytest

from acp_session.host import HostOptions, open_host
from tests.remote_server.raw_client import RawAcp, text_of
from tests.telemetry.support import in_memory

pytestmark = pytest.mark.anyio


async def test_a_turn_through_the_host_is_a_span(tmp_path: Path) -> None:
    telemetry = in_memory()
    options = HostOptions(
        agent=[sys.executable, "-m", "acp_conformance.agent"],
        instrument=True,
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
    )
    async with open_host(options) as host, httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        assert host.url is not None
        acp = RawAcp(client, host.url, tg)
        session = await acp.start(str(tmp_path))
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "/slow 2"}]}
        await acp.send_request("session/prompt", prompt, session)
        assert text_of(await acp.until_idle(session)).endswith("chunk 2. ")
        tg.cancel_scope.cancel()
    names = [span.name for span in telemetry.spans.get_finished_spans()]
    assert "initialize" in names and any(name.startswith("invoke_agent") for name in names), names
    turn = next(s for s in telemetry.spans.get_finished_spans() if s.name.startswith("invoke_agent"))
    assert turn.attributes is not None and turn.attributes.get("acp.session.id") == session
