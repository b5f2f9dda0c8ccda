"""Reconnecting to a remote agent (issue 36): ``acp-reference-agent --listen``, whose sessions belong to the server,
behind a TCP proxy the test controls (``tests/helpers/cutting_proxy.py``). The network is cut mid-turn; the same
``Conversation`` goes on over a new connection and the turn ends with exactly the agent's text, once. The cut
tests run in protocol v2 (``session/resume``) and v1 (``session/load``, answered when the running turn ends)."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder, ClientConnection, Conversation
from acp_session.client.reconnect import FINAL_REDIAL_STATUSES, refused_for_good
from acp_session.client_errors import ReconnectFailed, SessionLost
from acp_session.conversation import ChatDone, ChatError, ChatText
from acp_session.errors import RemoteHttpError
from tests.helpers.cutting_proxy import CuttingProxy, CutWhileDeciding, cutting_proxy

from .conftest import Server

pytestmark = pytest.mark.anyio

PROFILES = ["http", "ws"]
VERSIONS = [1, 2]
SLOW = 30
SLOW_TEXT = "".join(f"chunk {n}. " for n in range(1, SLOW + 1))  # what /slow 30 streams, 0.1 s a chunk


def port_of(server: Server) -> int:
    return int(server.url.rsplit(":", 1)[1].split("/")[0])


def builder(version: int = 2, **changes: Any) -> ClientBuilder:
    options: dict[str, Any] = {"attempts": 10, "backoff": 0.1, "max_backoff": 0.5, "deadline": 60.0}
    options.update(changes)
    return ClientBuilder("reconnect-remote", "1.0").protocol_versions(version).reconnect(**options)


@asynccontextmanager
async def through_proxy(
    server: Server, cwd: Path, scheme: str = "http", client_builder: ClientBuilder | None = None
) -> AsyncIterator[tuple[CuttingProxy, ClientConnection, Conversation]]:
    """A conversation with ``server`` through a cutting proxy: (the proxy, the connection, the conversation)."""
    async with (
        cutting_proxy(port_of(server)) as proxy,
        (client_builder or builder()).connect_url(proxy.url(scheme)) as client,
    ):
        yield proxy, client, await client.start_conversation(str(cwd))


async def agents_record(server: Server, session_id: str, cwd: str, version: int = 2) -> list[tuple[str, str]]:
    """The session as the agent keeps it: resumed with replay on a connection of its own, straight to the server."""
    async with ClientBuilder("record", "1.0").protocol_versions(version).connect_url(server.url) as client:
        resumed = await Conversation.resume(client, session_id, cwd)
        return [(m.role, m.text) for m in resumed.messages()]


def stop_reason_after_a_cut(version: int) -> str | None:
    """A cut turn that ended well: ``end_turn`` in v2 (its idle state update) and in v1 too, where the turn's end
    was its prompt's answer, which died with the cut: the reference agent's ``session/load`` answer says it again
    (``_meta`` ``acpSession/lastStopReason``; issue 51)."""
    return "end_turn"


def reply_chunks(conversation: Conversation) -> int:
    """How many ``/slow`` chunks of the reply this client has folded so far."""
    return sum(m.text.count("chunk ") for m in conversation.messages() if m.role == "agent")


def assert_no_duplicates(conversation: Conversation) -> None:
    ids = Counter((m.role, m.message_id) for m in conversation.messages())
    assert [key for key, count in ids.items() if count > 1] == []
    calls = Counter(entry.tool_call_id for entry in conversation.history() if hasattr(entry, "tool_call_id"))
    assert [key for key, count in calls.items() if count > 1] == []


async def cut_three_times(proxy: CuttingProxy, seen: Callable[[], int]) -> None:
    """Cut the network three times while the turn streams, each for a moment, each after more text arrived."""
    for at in (3, 9, 15):
        with anyio.fail_after(30):
            while seen() < at:
                await anyio.sleep(0.01)
        await proxy.cut_for(0.4)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scheme", PROFILES)
async def test_a_streamed_turn_cut_three_times_completes_with_exactly_the_agents_text(
    shared_server: Server, tmp_path: Path, scheme: str, version: int
) -> None:
    server = shared_server
    cwd = str(tmp_path)
    async with through_proxy(server, tmp_path, scheme, builder(version)) as (proxy, client, conversation):
        assert client.protocol.version == version
        turn = conversation.chat(f"/slow {SLOW}")
        async with anyio.create_task_group() as tg:
            tg.start_soon(cut_three_times, proxy, lambda: reply_chunks(conversation))
            with anyio.fail_after(90):
                response = await turn
        assert response.stop_reason == stop_reason_after_a_cut(version)
        assert response.text == SLOW_TEXT
        # v1: the first reconnect's session/load is answered when the turn ends, so the later cuts fail attempts
        # of that same reconnect (each load replays from the start) rather than start reconnects of their own.
        assert client.reconnection.count == (3 if version == 2 else 1)
        assert_no_duplicates(conversation)
        assert (await conversation.chat_to_completion("after")).text == "You said: after"
        mine = [(m.role, m.text) for m in conversation.messages()]
        # Last: resuming the session on another connection takes it away from this one.
        assert mine == await agents_record(server, conversation.session_id or "", cwd, version)


@pytest.mark.parametrize("scheme", PROFILES)
async def test_async_for_over_a_cut_turn_yields_every_piece_once(
    shared_server: Server, tmp_path: Path, scheme: str
) -> None:
    async with through_proxy(shared_server, tmp_path, scheme) as (proxy, _, conversation):
        events: list[Any] = []

        async def read() -> None:
            async for event in conversation.chat(f"/slow {SLOW}"):
                events.append(event)

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            tg.start_soon(cut_three_times, proxy, lambda: sum(isinstance(e, ChatText) for e in events))
        kinds = [e.kind for e in events]
        assert kinds.count("start") == 1 and kinds.count("reconnected") == 3 and kinds[-1] == "done"
        assert "".join(e.text for e in events if isinstance(e, ChatText)) == SLOW_TEXT  # no gap, nothing twice
        assert any(e.replayed for e in events if isinstance(e, ChatText))  # what came while away is marked
        assert isinstance(events[-1], ChatDone) and events[-1].response.text == SLOW_TEXT


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scheme", PROFILES)
async def test_a_cut_while_a_permission_is_pending_asks_again_and_answers_once(
    shared_server: Server, tmp_path: Path, scheme: str, version: int
) -> None:
    server = shared_server
    user = CutWhileDeciding()
    async with cutting_proxy(port_of(server)) as proxy, anyio.create_task_group() as tg:
        tg.start_soon(user.cut, proxy)
        client_builder = builder(version).on_request_permission(user.answer)
        async with client_builder.connect_url(proxy.url(scheme)) as client:
            conversation = await client.start_conversation(str(tmp_path))
            with anyio.fail_after(60):
                response = await conversation.chat("/permission")
            assert response.stop_reason == stop_reason_after_a_cut(version)
            assert len(user.asked) == 2 and user.asked[0] == user.asked[1]  # asked again, about the same thing
            assert [c.status for c in response.tool_calls] == ["completed"]
            assert client.reconnection.count == 1
            assert_no_duplicates(conversation)


@pytest.mark.parametrize("scheme", PROFILES)
async def test_a_cut_during_initialize_is_one_failed_attempt(
    shared_server: Server, tmp_path: Path, scheme: str
) -> None:
    async with through_proxy(shared_server, tmp_path, scheme) as (proxy, client, conversation):
        attempts: list[int] = []
        client.reconnection.on_event(lambda event: attempts.append(getattr(event, "attempt", 0)))
        turn = conversation.chat("/slow 15")
        with anyio.fail_after(30):
            while not reply_chunks(conversation):
                await anyio.sleep(0.01)
        proxy.cut_on_first_bytes = 1  # the first reconnect's initialize is cut as it goes out
        proxy.cut()
        with anyio.fail_after(60):
            response = await turn
        assert response.text == "".join(f"chunk {n}. " for n in range(1, 16))
        assert attempts[:3] == [1, 2, 2]  # attempt 1 failed at initialize, attempt 2 reconnected
        assert client.reconnection.count == 1


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scheme", PROFILES)
async def test_a_server_restarted_without_its_sessions_ends_the_turn_with_session_lost(
    start_server: Callable[..., Server], tmp_path: Path, scheme: str, version: int
) -> None:
    server = start_server()
    async with through_proxy(server, tmp_path, scheme, builder(version)) as (proxy, client, conversation):
        events: list[Any] = []
        async for event in conversation.chat(f"/slow {SLOW}"):
            events.append(event)
            if isinstance(event, ChatText) and len(events) == 3:
                server.process.kill()  # the server dies with its sessions (no --store)
                server.process.wait()
                proxy.upstream_port = port_of(start_server())  # a new server process: it knows no session
                proxy.cut()
        assert [e.kind for e in events[-2:]] == ["session_lost", "error"]
        assert isinstance(events[-1], ChatError) and isinstance(events[-1].error, SessionLost)
        other = await client.start_conversation(str(tmp_path))  # the connection itself is fine
        assert (await other.chat_to_completion("anyone")).text == "You said: anyone"


async def test_the_deadline_ends_a_turn_with_a_typed_error_and_no_hang(shared_server: Server, tmp_path: Path) -> None:
    impatient = builder(deadline=2.0)
    async with through_proxy(shared_server, tmp_path, client_builder=impatient) as (proxy, _, conversation):
        turn = conversation.chat(f"/slow {SLOW}")
        with anyio.fail_after(30):
            while not reply_chunks(conversation):
                await anyio.sleep(0.01)
        proxy.refusing = True  # the network stays down
        proxy.cut()
        started = anyio.current_time()
        with anyio.fail_after(30), pytest.raises(ReconnectFailed) as failed:
            await turn
        assert failed.value.deadline_reached and anyio.current_time() - started < 15


APP = "http://app.example"
"""The Origin of a browser page the first server allows (``--allow-origin``) and the second one refuses (403)."""


async def until_replying(conversation: Conversation) -> None:
    with anyio.fail_after(30):
        while not reply_chunks(conversation):
            await anyio.sleep(0.01)


@pytest.mark.parametrize("scheme", PROFILES)
async def test_a_redial_refused_with_403_gives_up_at_once_with_the_status(
    start_server: Callable[..., Server], shared_server: Server, tmp_path: Path, scheme: str
) -> None:
    server = start_server("--allow-origin", APP)
    strict = shared_server  # the same agent without that rule: the page's Origin gets 403
    patient = builder(attempts=5, backoff=5.0, max_backoff=5.0, jitter=0.0)  # a retry would wait 5 s first
    async with (
        cutting_proxy(port_of(server)) as proxy,
        patient.connect_url(proxy.url(scheme), headers={"Origin": APP}) as client,
    ):
        events: list[Any] = []
        client.reconnection.on_event(events.append)
        conversation = await client.start_conversation(str(tmp_path))
        turn = conversation.chat(f"/slow {SLOW}")
        await until_replying(conversation)
        proxy.upstream_port = port_of(strict)
        proxy.cut()
        started = anyio.current_time()
        with anyio.fail_after(4), pytest.raises(ReconnectFailed) as failed:  # sooner than one back-off
            await turn
        assert anyio.current_time() - started < 4
        assert await client.wait_closed() is failed.value
    error = failed.value
    assert (error.status, error.attempts, error.deadline_reached) == (403, 1, False)
    assert isinstance(error.cause, RemoteHttpError) and error.cause.status == 403
    assert f"Origin {APP} is not allowed" in error.cause.body  # the server's reason, over HTTP and WebSocket
    assert "refused the reconnect with HTTP 403" in str(error)
    assert [e.kind for e in events] == ["reconnecting", "gave_up"] and events[0].attempt == 1
    assert events[1].error is error


async def test_a_redial_refused_with_another_status_is_retried_until_the_attempts_run_out(
    start_server: Callable[..., Server], shared_server: Server, tmp_path: Path
) -> None:
    """400 is no final answer (``FINAL_REDIAL_STATUSES``): a WebSocket re-dial to a server that requires its
    affinity cookie carries the cookie another server set, which this one refuses (``--require-cookie``)."""
    server = shared_server
    stranger = start_server("--require-cookie")
    async with (
        cutting_proxy(port_of(server)) as proxy,
        builder(attempts=3, backoff=0.05).connect_url(proxy.url("ws")) as client,
    ):
        events: list[Any] = []
        client.reconnection.on_event(events.append)
        conversation = await client.start_conversation(str(tmp_path))
        turn = conversation.chat(f"/slow {SLOW}")
        await until_replying(conversation)
        proxy.upstream_port = port_of(stranger)
        proxy.cut()
        with anyio.fail_after(30), pytest.raises(ReconnectFailed) as failed:
            await turn
    error = failed.value
    assert (error.status, error.attempts, error.deadline_reached) == (None, 3, False)
    assert isinstance(error.cause, RemoteHttpError) and error.cause.status == 400
    assert error.cause.body == "Missing or wrong acp_affinity cookie (the server requires it)"
    assert [e.kind for e in events] == ["reconnecting"] * 3 + ["gave_up"]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 407, 408, 409, 410, 429, 500, 502, 503])
def test_which_statuses_end_a_reconnect(status: int) -> None:
    error = RemoteHttpError(-32603, f"initialize: HTTP {status}", {"status": status, "body": "", "transport": "http"})
    final = status in (401, 403, 407, 410)
    assert (status in FINAL_REDIAL_STATUSES) == final
    assert refused_for_good(error) == (status if final else None)
    assert refused_for_good(OSError("connection refused")) is None


@pytest.mark.parametrize("scheme", PROFILES)
async def test_a_silent_connection_is_found_by_the_liveness_probe_and_replaced(
    shared_server: Server, tmp_path: Path, scheme: str
) -> None:
    quick_probe = builder(idle_timeout=0.5, probe_timeout=0.5)
    async with through_proxy(shared_server, tmp_path, scheme, quick_probe) as (proxy, client, conversation):
        turn = conversation.chat(f"/slow {SLOW}")
        with anyio.fail_after(30):
            while not reply_chunks(conversation):
                await anyio.sleep(0.01)
        proxy.stall()  # nothing more gets through, and nothing tells the client: only the probe can tell
        with anyio.fail_after(60):
            response = await turn
        assert response.text == SLOW_TEXT
        assert client.reconnection.count >= 1


async def test_remote_connections_reconnect_by_default_and_can_be_told_not_to(shared_server: Server) -> None:
    server = shared_server
    async with ClientBuilder().connect_url(server.url) as client:
        assert client.reconnection.policy is not None
    async with ClientBuilder().reconnect(False).connect_url(server.url) as client:
        assert client.reconnection.policy is None


async def test_the_cli_through_a_cutting_proxy_prints_the_whole_reply_once(
    shared_server: Server, tmp_path: Path, anyio_backend_name: str
) -> None:
    """The CLI runs its own loop: which backend drives this test's proxy is not what the case is about, so each
    scheme gets one CLI run (HTTP beside asyncio, WebSocket beside trio) instead of one per scheme and backend."""
    from tests.cli.support import CLI, cli_env

    server = shared_server
    scheme = "http" if anyio_backend_name == "asyncio" else "ws"
    async with cutting_proxy(port_of(server)) as proxy:
        command = [CLI, "chat", "--url", proxy.url(scheme), "--cwd", str(tmp_path), f"/slow {SLOW}"]
        async with await anyio.open_process(command, env=cli_env(tmp_path), cwd=tmp_path) as process:
            assert process.stdout is not None and process.stderr is not None
            out = b""
            cuts = 0
            with anyio.fail_after(90):
                async for chunk in process.stdout:
                    out += chunk
                    if cuts < 3 and out.count(b"chunk ") >= 4 + 6 * cuts:
                        cuts += 1
                        await proxy.cut_for(0.3)
                err = b"".join([chunk async for chunk in process.stderr])
                code = await process.wait()
        text = out.decode().replace("\n", "")  # the reply's line breaks where the reconnect lines went to stderr
        assert code == 0, err.decode()
        assert cuts == 3
        assert SLOW_TEXT.strip() in text and text.count("chunk 1. ") == 1  # the whole reply, once
        assert err.decode().count("connection lost, reconnecting (1/") == 3
