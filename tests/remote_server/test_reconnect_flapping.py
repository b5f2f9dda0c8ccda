"""A flapping connection (issue 51): the server takes every reconnect (``initialize`` and ``session/resume``
answered) and the network cuts it again 0.3 s later. The reconnect budget holds over the whole outage: the turn
ends in ``ReconnectFailed`` naming the flapping after ``attempts`` reconnects, with a back-off that kept
growing, instead of reconnecting ~100 times in 45 s and never returning. ``acp-reference-agent --listen`` behind
a TCP proxy the test cuts (``tests/helpers/cutting_proxy.py``), over both profiles."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.cli.messages import describe
from acp_session.client.outage import OutageTracker
from acp_session.client.reconnect import Reconnected, ReconnectPolicy
from acp_session.client_errors import ReconnectFailed
from tests.helpers.cutting_proxy import CuttingProxy, cutting_proxy

from .conftest import Server

pytestmark = pytest.mark.anyio

ATTEMPTS = 4
BACKOFF = 0.2
CUT_AFTER = 0.3


def port_of(server: Server) -> int:
    return int(server.url.rsplit(":", 1)[1].split("/")[0])


async def flap(proxy: CuttingProxy, reconnected: anyio.abc.ObjectReceiveStream[Any]) -> None:
    """Cut the network 0.3 s after each reconnect."""
    async for _ in reconnected:
        await anyio.sleep(CUT_AFTER)
        proxy.cut()


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_a_flapping_connection_ends_the_turn_with_reconnect_failed_within_the_policy(
    start_server: Callable[..., Server], tmp_path: Path, scheme: str
) -> None:
    server = start_server()
    policy = {"attempts": ATTEMPTS, "backoff": BACKOFF, "max_backoff": 5, "jitter": 0, "deadline": 60}
    builder = ClientBuilder("flapping", "1.0").reconnect(**policy)
    events: list[Any] = []
    send, receive = anyio.create_memory_object_stream[Any](100)
    async with cutting_proxy(port_of(server)) as proxy, builder.connect_url(proxy.url(scheme)) as client:

        def on_event(event: Any) -> None:
            events.append((anyio.current_time(), event))
            if isinstance(event, Reconnected):
                send.send_nowait(event)

        client.reconnection.on_event(on_event)
        conversation = await client.start_conversation(str(tmp_path))
        async with anyio.create_task_group() as tg:
            tg.start_soon(flap, proxy, receive)
            turn = conversation.chat("/slow 900")  # 90 s of streaming: it outlasts the test
            with anyio.fail_after(30):
                while not any("chunk 2." in m.text for m in conversation.messages() if m.role == "agent"):
                    await anyio.sleep(0.02)
            proxy.cut()  # the turn streams: the network goes now
            with anyio.fail_after(45), pytest.raises(ReconnectFailed) as failed:
                await turn
            tg.cancel_scope.cancel()
    error = failed.value
    assert error.flapping and error.drops == ATTEMPTS and not error.deadline_reached
    assert "flapping" in str(error)
    assert client.reconnection.count == ATTEMPTS  # and no more: ~100 in 45 s before
    assert error.elapsed < 60
    # The back-off kept growing over the drops: the dial after the n-th re-drop waited the back-off of the n
    # dials before it (0.2, 0.4, 0.8 s here), after the 0.3 s the connection had stayed up.
    starts = [at for at, event in events if event.kind == "reconnecting"]
    ends = [at for at, event in events if event.kind == "reconnected"]
    waits = [start - end for start, end in zip(starts[1:], ends, strict=False)]
    assert len(waits) == ATTEMPTS - 1
    assert all(wait >= CUT_AFTER + BACKOFF * 2**n for n, wait in enumerate(waits)), waits
    assert events[-1][1].kind == "gave_up"


def test_an_outage_ends_once_a_connection_stayed_up_long_enough() -> None:
    """Sans-IO: drops sooner than ``stable_after`` after a reconnect continue the outage (its budget and its
    back-off); a drop later starts a fresh one."""
    policy = ReconnectPolicy(attempts=2, backoff=1.0, jitter=0.0, stable_after=10.0)
    outages = OutageTracker(policy)
    first = outages.dropped(0.0)
    assert outages.delay() == 0.0 and outages.dialing() == 1
    outages.came_back(1.0)
    assert outages.dropped(5.0) is first and first.drops == 1 and not outages.flapping()
    assert outages.delay() == 1.0 and outages.dialing() == 2
    outages.came_back(6.0)
    assert outages.dropped(7.0) is first and outages.flapping()  # two reconnects, each dropped again
    assert outages.remaining(7.0) == policy.deadline - 7.0
    outages.came_back(8.0)
    fresh = outages.dropped(18.0)  # up for 10 s: that outage was over
    assert fresh is not first and fresh.drops == 0 and outages.delay() == 0.0 and not outages.flapping()


def test_the_cli_says_the_connection_kept_dropping() -> None:
    flapping = ReconnectFailed(5, 9.5, ConnectionError("cut"), deadline_reached=False, drops=5)
    assert describe(flapping).message == (
        "the connection to the agent was lost and could not be re-established "
        "(it kept dropping right after each reconnect (5 times))"
    )
    assert "flapping" in str(flapping) and flapping.flapping
    failing = ReconnectFailed(5, 9.5, ConnectionError("refused"), deadline_reached=False)
    assert not failing.flapping and "5 reconnect attempts failed" in str(failing)
