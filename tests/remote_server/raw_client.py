"""A hand-rolled client of ACP's Streamable HTTP profile over httpx, for the server's raw-HTTP tests.

It knows only the wire (POST, SSE GET, DELETE, the two headers), so the tests see every status code and every
message, on the stream it came by. SSE readers run as tasks in the caller's task group and put
``(stream, message)`` into one inbox; ``stream`` is None for the connection stream, else the session id.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import anyio
import httpx
from anyio.abc import TaskGroup, TaskStatus

__all__ = ["RawAcp", "initialize_params"]

TIMEOUT = 15.0


def initialize_params() -> dict[str, Any]:
    return {"protocolVersion": 2, "info": {"name": "raw-http-test", "version": "1"}, "capabilities": {}}


class RawAcp:
    def __init__(self, client: httpx.AsyncClient, url: str, tg: TaskGroup) -> None:
        self.client = client
        self.url = url
        self.tg = tg
        self.connection_id: str | None = None
        self.seen: list[tuple[str | None, dict[str, Any]]] = []
        self._inbox_send, self._inbox = anyio.create_memory_object_stream[tuple[str | None, dict[str, Any]]](math.inf)
        self._next_id = 100
        self.stream_ended: dict[str | None, anyio.Event] = {}

    def headers(self, session: str | None = None, **extra: str) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self.connection_id is not None:
            headers["acp-connection-id"] = self.connection_id
        if session is not None:
            headers["acp-session-id"] = session
        headers.update({name.replace("_", "-"): value for name, value in extra.items()})
        return headers

    async def initialize(self) -> httpx.Response:
        message = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize_params()}
        response = await self.client.post(self.url, json=message)
        assert response.status_code == 200, response.text
        self.connection_id = response.headers["acp-connection-id"]
        return response

    async def post(self, message: dict[str, Any], session: str | None = None, **extra: str) -> httpx.Response:
        return await self.client.post(self.url, content=json.dumps(message), headers=self.headers(session, **extra))

    async def send_request(self, method: str, params: dict[str, Any], session: str | None = None) -> int:
        """POST a request (202 expected) and return its id; its answer comes on a stream."""
        self._next_id += 1
        response = await self.post({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}, session)
        assert response.status_code == 202, (response.status_code, response.text)
        return self._next_id

    async def call(self, method: str, params: dict[str, Any], session: str | None = None) -> dict[str, Any]:
        """A request and its answer (result or error object as the whole message)."""
        request_id = await self.send_request(method, params, session)
        return await self.next_message(lambda stream, m: m.get("id") == request_id and "method" not in m)

    async def open_stream(self, session: str | None = None) -> None:
        """Open the connection's (or a session's) SSE stream; returns once the server answered 200."""
        await self.tg.start(self._read_stream, session)

    async def _read_stream(self, session: str | None, *, task_status: TaskStatus[None]) -> None:
        headers = self.headers(session, accept="text/event-stream")
        ended = self.stream_ended.setdefault(session, anyio.Event())
        try:
            async with self.client.stream("GET", self.url, headers=headers, timeout=None) as response:
                assert response.status_code == 200, (response.status_code, await response.aread())
                assert response.headers["content-type"].startswith("text/event-stream")
                task_status.started()
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        await self._inbox_send.send((session, json.loads(line[5:])))
        except (httpx.ReadError, httpx.RemoteProtocolError, anyio.ClosedResourceError):
            pass
        finally:
            ended.set()

    async def next_message(
        self, wanted: Callable[[str | None, dict[str, Any]], bool], timeout: float = TIMEOUT
    ) -> dict[str, Any]:
        """The next message that ``wanted(stream, message)``; every message read is kept in ``seen``."""
        with anyio.fail_after(timeout):
            while True:
                stream, message = await self._inbox.receive()
                self.seen.append((stream, message))
                if wanted(stream, message):
                    return message

    async def until_idle(self, session: str) -> list[dict[str, Any]]:
        """The session's updates up to and including the idle state_update that ends its foreground work."""
        updates: list[dict[str, Any]] = []
        while True:
            message = await self.next_message(
                lambda stream, m: m.get("method") == "session/update" and m["params"]["sessionId"] == session
            )
            update = message["params"]["update"]
            updates.append(update)
            if update["sessionUpdate"] == "state_update" and update["state"] == "idle":
                return updates

    async def new_session(self, cwd: str) -> str:
        answer = await self.call("session/new", {"cwd": cwd, "mcpServers": []})
        session_id: str = answer["result"]["sessionId"]
        await self.open_stream(session_id)
        return session_id

    async def connect(self) -> None:
        """initialize and open the connection stream."""
        await self.initialize()
        await self.open_stream()

    async def start(self, cwd: str) -> str:
        """``connect`` and a new session with its stream: the session id."""
        await self.connect()
        return await self.new_session(cwd)

    def updates_seen(self) -> list[dict[str, Any]]:
        return [m["params"]["update"] for _, m in self.seen if m.get("method") == "session/update"]

    async def delete(self) -> httpx.Response:
        return await self.client.delete(self.url, headers={"acp-connection-id": self.connection_id or ""})


def text_of(updates: list[dict[str, Any]]) -> str:
    return "".join(
        u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk" and "text" in u["content"]
    )
