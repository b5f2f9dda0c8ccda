"""A client that falls further behind than the host's update log keeps is told, never fed a hole: the host
(``open_host``, both backends, ``max_log_entries`` small) before an agent that streams 20 000 chunks as fast as the
pipe takes them. Over WebSocket the client does not read its socket (a small receive buffer) while the turn runs;
over Streamable HTTP it reads, but the log is smaller than what the host reads from the agent at once. Either way
what the client got is the turn's first chunks without a gap, then its connection ends (the WebSocket closed with
1013 and the reason), and a client that resumes the session with a replay gets a notice of what is no longer kept,
then the rest."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from anyio.abc import SocketStream
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Message, Request, TextMessage

from acp_session.host import Host, HostEvent, HostOptions, open_host
from tests.remote_server.raw_client import RawAcp

pytestmark = pytest.mark.anyio

N = 20_000
KEPT = 50
AGENT = r"""
import json, sys
n = int(sys.argv[1])
out = sys.stdout.buffer
def write(obj):
    out.write(json.dumps(obj).encode() + b"\n"); out.flush()
def note(update):
    write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": update}})
for line in sys.stdin.buffer:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        write({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 2, "info": {"name": "fast", "version": "1"},
               "capabilities": {"session": {}}}})
    elif method == "session/new":
        write({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        write({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u%d" % rid}})
        note({"sessionUpdate": "state_update", "state": "running"})
        for i in range(n):
            out.write(json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1",
                "update": {"sessionUpdate": "agent_message_chunk", "messageId": "m%d" % rid,
                           "content": {"type": "text", "text": "%07d " % i}}}}).encode() + b"\n")
        out.flush()
        note({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
"""


class Watched(Host):
    events: list[HostEvent]
    fell_behind: anyio.Event
    turn_ended: anyio.Event


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[Watched]:
    agent = tmp_path / "fast_agent.py"
    agent.write_text(AGENT)
    events: list[HostEvent] = []
    fell_behind, turn_ended = anyio.Event(), anyio.Event()

    def heard(event: HostEvent) -> None:
        events.append(event)
        if event.kind == "client_fell_behind":
            fell_behind.set()
        elif event.kind == "turn_ended":
            turn_ended.set()

    options = HostOptions(agent=[sys.executable, str(agent), str(N)], max_log_entries=KEPT)
    async with open_host(options, on_event=heard) as running:
        watched: Any = running
        watched.events, watched.fell_behind, watched.turn_ended = events, fell_behind, turn_ended
        yield watched


def _request(rid: int, method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


INIT = {"protocolVersion": 2, "info": {"name": "slow-client", "version": "1"}, "capabilities": {}}


class RawWebSocket:
    """A WebSocket client on a socket whose receive buffer is small, so not reading it soon stops the server."""

    def __init__(self, stream: SocketStream) -> None:
        self.stream = stream
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.closed: CloseConnection | None = None
        self._text = ""

    @classmethod
    async def connect(cls, url: str) -> RawWebSocket:
        host, port = url.removeprefix("http://").split("/")[0].split(":")
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        with anyio.fail_after(10):
            try:
                sock.connect((host, int(port)))
            except BlockingIOError:
                await anyio.wait_writable(sock)
        self = cls(await SocketStream.from_socket(sock))
        await self.stream.send(self.ws.send(Request(host=f"{host}:{port}", target="/acp")))
        while not any(isinstance(e, AcceptConnection) for e in await self._events()):
            pass
        return self

    async def _events(self) -> list[Any]:
        data = await self.stream.receive()
        self.ws.receive_data(data)
        return list(self.ws.events())

    async def send(self, text: str) -> None:
        await self.stream.send(self.ws.send(Message(data=text)))

    async def messages(self) -> AsyncIterator[dict[str, Any]]:
        """Each message until the server's close (``closed``) or the socket's end."""
        while self.closed is None:
            try:
                events = await self._events()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return
            for event in events:
                if isinstance(event, TextMessage):
                    self._text += event.data
                    if event.message_finished:
                        text, self._text = self._text, ""
                        yield json.loads(text)
                elif isinstance(event, CloseConnection):
                    self.closed = event

    async def call(self, rid: int, method: str, params: dict[str, Any], seen: list[dict[str, Any]]) -> Any:
        await self.send(_request(rid, method, params))
        async for message in self.messages():
            seen.append(message)
            if message.get("id") == rid and "method" not in message:
                return message
        raise AssertionError(f"no answer to {method}: {self.closed}")


def _chunks(messages: list[dict[str, Any]]) -> list[int]:
    return [
        int(m["params"]["update"]["content"]["text"])
        for m in messages
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    ]


async def _resumed_with_replay(url: str, cwd: str) -> list[dict[str, Any]]:
    """A second client resumes the session from the start: what it is sent before the answer."""
    ws = await RawWebSocket.connect(url)
    seen: list[dict[str, Any]] = []
    async with ws.stream:
        await ws.call(0, "initialize", INIT, seen)
        params = {"sessionId": "s1", "cwd": cwd, "mcpServers": [], "replayFrom": {"type": "start"}}
        answer = await ws.call(1, "session/resume", params, seen)
    assert "result" in answer, answer
    return [m["params"]["update"] for m in seen if m.get("method") == "session/update"]


def _check_replay(updates: list[dict[str, Any]]) -> None:
    notice = updates[0]
    assert notice["sessionUpdate"] == "notice" and "no longer kept" in notice["title"], notice
    replayed = _chunks([{"method": "session/update", "params": {"update": u}} for u in updates])
    assert replayed == list(range(N - len(replayed), N)) and 0 < len(replayed) < KEPT, replayed
    assert updates[-1] == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}


async def test_a_websocket_client_that_stops_reading_is_ended_not_fed_a_hole(host: Watched, tmp_path: Path) -> None:
    assert host.url is not None
    cwd = str(tmp_path)
    ws = await RawWebSocket.connect(host.url)
    seen: list[dict[str, Any]] = []
    async with ws.stream:
        await ws.call(0, "initialize", INIT, seen)
        assert (await ws.call(1, "session/new", {"cwd": cwd, "mcpServers": []}, seen))["result"]["sessionId"] == "s1"
        await ws.send(_request(2, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "go"}]}))
        with anyio.fail_after(60):  # the client reads nothing until the host gave up on it
            await host.fell_behind.wait()
            await host.turn_ended.wait()
        with anyio.fail_after(60):
            seen += [message async for message in ws.messages()]
    got = _chunks(seen)
    assert got == list(range(len(got))) and len(got) < N, (len(got), got[-3:])
    assert ws.closed is not None and ws.closed.code == 1013 and "fell behind" in ws.closed.reason, ws.closed
    event = next(e for e in host.events if e.kind == "client_fell_behind")
    assert event.session_id == "s1" and event.detail["missed"] > 0 and event.detail["kept"] == KEPT
    _check_replay(await _resumed_with_replay(host.url, cwd))


async def test_an_http_client_behind_the_log_is_ended_not_fed_a_hole(host: Watched, tmp_path: Path) -> None:
    assert host.url is not None
    cwd = str(tmp_path)
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        acp = RawAcp(client, host.url, tg)
        await acp.start(cwd)
        await acp.send_request("session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "go"}]}, "s1")
        with anyio.fail_after(60):
            await host.fell_behind.wait()
            await host.turn_ended.wait()
            await acp.stream_ended["s1"].wait()
        tg.cancel_scope.cancel()
    while True:  # what the stream delivered before it ended is in the inbox already
        try:
            acp.seen.append(acp._inbox.receive_nowait())
        except anyio.WouldBlock:
            break
    got = _chunks([m for _, m in acp.seen])
    assert got == list(range(len(got))) and len(got) < N, (len(got), got[-3:])
    _check_replay(await _resumed_with_replay(host.url, cwd))
