"""Issue 51 against hostile HTTP servers on 127.0.0.1: a server that sets cookies without end cannot grow the jar or
the ``Cookie`` header past RFC 6265's minimums (item 10); an agent announcing subagents without end cannot make the
client open a stream for each (item 5)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import ByteStream

from acp_session import ClientBuilder
from acp_session.transport.remote import RemoteLimits, cookie_names

from .hostile import Request, Served, initialize_answer, send, serve

pytestmark = pytest.mark.anyio

SMALL = RemoteLimits(max_message=256 * 1024, response_timeout=5.0, connect_timeout=5.0)
EVENTS_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
MAX_COOKIE_BYTES, MAX_COOKIES_PER_DOMAIN = 4096, 50  # RFC 6265's minimums, the jar's caps


def set_cookies(names: list[str], size: int) -> bytes:
    return b"".join(b"Set-Cookie: %s=%s; Path=/\r\n" % (name.encode(), b"v" * size) for name in names)


async def test_a_server_setting_cookies_without_end_keeps_the_jar_and_the_header_bounded() -> None:
    """Issue 51, 10: 1 240 cookies made a 4.97 MB ``Cookie`` header on every request. Now at most 50 per domain
    (the newest set), none over 4 KiB: the header the server gets back stays under 50 x 4 KiB."""
    rounds, per_round = 26, 48  # 1 248 cookies, each response's headers under h11's 16 KiB
    sent_back: list[str] = []

    async def cookie_monster(stream: ByteStream, request: Request, served: Served, _: bytearray) -> bool:
        if request.method == "GET":
            await send(stream, served, EVENTS_HEAD)
            await anyio.sleep(30)
            return False
        if request.method == "DELETE":
            await send(stream, served, b"HTTP/1.1 204 No Content\r\n\r\n")
            return False
        if request.json().get("method") == "initialize":
            answer = initialize_answer(request)
            head, _, body = answer.partition(b"\r\n\r\n")
            huge = set_cookies(["huge"], MAX_COOKIE_BYTES)  # over the limit with its domain and path
            large = set_cookies([f"large-{i}" for i in range(3)], 3900)
            await send(stream, served, head + b"\r\n" + huge + large + b"\r\n" + body)
            return True
        sent_back.append(request.headers.get("cookie", ""))
        n = int(request.json()["params"]["n"])
        names = [f"c{n}-{i}" for i in range(per_round)]
        answer = b"HTTP/1.1 202 Accepted\r\n" + set_cookies(names, 200) + b"Content-Length: 0\r\n\r\n"
        await send(stream, served, answer)
        return True

    async with serve(cookie_monster) as served:
        with anyio.fail_after(60):
            async with ClientBuilder().connect_url(served.url, limits=SMALL) as client:
                for n in range(rounds + 1):
                    await client.notify("_x/ping", {"n": n})
                jar = client.rpc.transport.dialer.cookies  # type: ignore[attr-defined]
                while f"c{rounds}-{per_round - 1}" not in cookie_names(jar):  # the last answer is read
                    await anyio.sleep(0.01)
                held = cookie_names(jar)
    # The 50 set last are kept (the last round's 48 and two of the round before); the oldest went.
    newest = [f"c{rounds - 1}-{i}" for i in (per_round - 2, per_round - 1)]
    newest += [f"c{rounds}-{i}" for i in range(per_round)]
    assert held == sorted(newest)
    for header in sent_back:
        cookies = [part.split("=", 1)[0] for part in header.split("; ") if part]
        assert len(cookies) <= MAX_COOKIES_PER_DOMAIN, len(cookies)
        assert "huge" not in cookies
        assert len(header) < MAX_COOKIES_PER_DOMAIN * MAX_COOKIE_BYTES
    assert sent_back[0].count("large-") == 3  # kept while there was room
    assert max(len(header) for header in sent_back[2:]) < 50 * 260  # the large ones went first


def test_the_jar_caps_each_domain_and_the_whole() -> None:
    """Sans-IO: per domain the cookie set longest ago goes first (setting one again makes it the newest), and the
    whole jar holds at most ``max_cookies``."""
    from http.cookiejar import Cookie

    from acp_session.transport.remote.cookies import BoundedCookieJar

    def cookie(domain: str, name: str, value: str = "v") -> Cookie:
        return Cookie(0, name, value, None, False, domain, True, False, "/", True, False, None, False, None, None, {})

    jar = BoundedCookieJar(max_per_domain=3, max_cookies=5)
    for name in ("a", "b", "c"):
        jar.set_cookie(cookie("one.test", name))
    jar.set_cookie(cookie("one.test", "a", "again"))  # a is the newest now
    jar.set_cookie(cookie("one.test", "d"))
    assert sorted(c.name for c in jar) == ["a", "c", "d"]
    for name in ("p", "q", "r"):
        jar.set_cookie(cookie("two.test", name))
    assert sorted((c.domain, c.name) for c in jar) == [
        ("one.test", "a"),
        ("one.test", "d"),
        ("two.test", "p"),
        ("two.test", "q"),
        ("two.test", "r"),
    ]
    jar.clear("two.test")
    jar.set_cookie(cookie("one.test", "x" * MAX_COOKIE_BYTES))
    assert sorted(c.name for c in jar) == ["a", "d"] and jar.dropped == 3


class Kids:
    """A server whose root session announces ``children`` subagents on the prompt, each child's GET answered
    with one update of its own and then held open (the first ``closing`` closed after it). It counts the GETs."""

    def __init__(self, children: int, closing: int = 0) -> None:
        self.children = children
        self.closing = closing
        self.child_gets: list[str] = []
        self.open_now = 0
        self.most_open = 0
        self.prompt: Any = None
        self.prompted = anyio.Event()
        self.to_connection: list[bytes] = []
        self.connection_wakes = anyio.Event()

    def event(self, message: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps(message, separators=(",", ":")).encode() + b"\n\n"

    def update(self, session: str, update: dict[str, Any]) -> bytes:
        params = {"sessionId": session, "update": update}
        return self.event({"jsonrpc": "2.0", "method": "session/update", "params": params})

    def text(self, session: str, message_id: str, value: str) -> bytes:
        content = {"type": "text", "text": value}
        return self.update(
            session, {"sessionUpdate": "agent_message_chunk", "messageId": message_id, "content": content}
        )

    async def handle(self, stream: ByteStream, request: Request, served: Served, _: bytearray) -> bool:
        if request.method == "DELETE":
            await send(stream, served, b"HTTP/1.1 204 No Content\r\n\r\n")
            return False
        if request.method == "POST":
            message = request.json()
            if message.get("method") == "initialize":
                await send(stream, served, initialize_answer(request))
                return True
            await send(stream, served, b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
            if message.get("method") == "session/new":
                self.to_connection.append(
                    self.event({"jsonrpc": "2.0", "id": message["id"], "result": {"sessionId": "root"}})
                )
                self.connection_wakes.set()
            elif message.get("method") == "session/prompt":
                self.prompt = message
                self.prompted.set()
            return True
        session = request.headers.get("acp-session-id")
        await send(stream, served, EVENTS_HEAD)
        if session is None:
            while True:
                await self.connection_wakes.wait()
                self.connection_wakes = anyio.Event()
                while self.to_connection:
                    await send(stream, served, self.to_connection.pop(0))
        if session == "root":
            await self.prompted.wait()
            answer = {"jsonrpc": "2.0", "id": self.prompt["id"], "result": {"messageId": "u1"}}
            out = [self.event(answer), self.update("root", {"sessionUpdate": "state_update", "state": "running"})]
            out.append(self.text("root", "m1", "hello"))
            for i in range(self.children):
                out.append(self.update("root", {"sessionUpdate": "subagent_update", "sessionId": f"kid-{i}"}))
            out.append(self.text("root", "m2", "after"))
            out.append(
                self.update("root", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
            )
            await send(stream, served, b"".join(out))
            await anyio.sleep(60)
            return False
        self.child_gets.append(session)
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        try:
            await send(stream, served, self.text(session, "k", f"child {session}"))
            if int(session.removeprefix("kid-")) >= self.closing:
                await anyio.sleep(60)
        finally:
            self.open_now -= 1
        return False


async def test_three_thousand_announced_children_open_at_most_the_cap_of_streams() -> None:
    """Issue 51, 5: every announced subagent opened a GET; 3 000 of them made 1 025 at once and, with 1 024
    descriptors, the turn and the connection died. Now the client follows only the children it tracks
    (``Limits.subagents``, 1 024), at most ``max_subagent_streams`` (64) at once: when the server closes one, the
    next waiting child's opens. The turn ends normally."""
    kids = Kids(3000, closing=10)
    cap = 64  # RemoteLimits().max_subagent_streams
    async with serve(kids.handle) as served:
        with anyio.fail_after(60):
            async with ClientBuilder().connect_url(served.url, limits=SMALL) as client:
                conversation = await client.start_conversation("/")
                response = await conversation.chat_to_completion("go")
                while len(kids.child_gets) < cap + kids.closing:  # the ten closed ones made room for ten more
                    await anyio.sleep(0.01)
                while "child kid-0" not in [m.text for m in conversation.subagents["kid-0"].history()]:
                    await anyio.sleep(0.01)
                assert not client.rpc.closed
    assert response.stop_reason == "end_turn" and response.text == "hello\n\nafter"
    assert kids.most_open <= cap
    # The first children announced, each once (those waiting open in the order announced).
    assert sorted(kids.child_gets) == sorted(f"kid-{i}" for i in range(cap + kids.closing))


async def test_only_the_children_the_client_tracks_get_a_stream() -> None:
    """Past ``Limits.subagents`` (50 here, under the 64 streams) a running child is refused: the transport never
    opens its stream."""
    kids = Kids(3000)
    async with serve(kids.handle) as served:
        with anyio.fail_after(60):
            async with ClientBuilder().limits(subagents=50).connect_url(served.url, limits=SMALL) as client:
                conversation = await client.start_conversation("/")
                response = await conversation.chat_to_completion("go")
                while len(kids.child_gets) < 50:
                    await anyio.sleep(0.01)
                await anyio.sleep(0.2)  # any stream opened for a refused child would show up meanwhile
    assert response.stop_reason == "end_turn"
    assert sorted(kids.child_gets) == sorted(f"kid-{i}" for i in range(50))


EMFILE_CLIENT = r"""
import resource, sys
import anyio
from acp_session import ClientBuilder
from acp_session.transport.remote import RemoteLimits

url, backend, soft = sys.argv[1], sys.argv[2], int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

async def main():
    # Far past the descriptors (a tree before the cap opened a stream per child anyway).
    more = {"max_subagent_streams": 1000} if hasattr(RemoteLimits, "max_subagent_streams") else {}
    limits = RemoteLimits(response_timeout=10.0, **more)
    async with ClientBuilder().connect_url(url, limits=limits) as client:
        try:
            conversation = await client.start_conversation("/")
            await conversation.chat_to_completion("go")
        except Exception as exc:
            print("TURN", type(exc).__name__, exc)
        with anyio.fail_after(30):
            await client.rpc.wait_closed()
        print("FAILURE", type(client.rpc.transport.failure).__name__, client.rpc.transport.failure)

anyio.run(main, backend=backend)
"""


async def test_running_out_of_descriptors_is_named(tmp_path: Path, anyio_backend: str) -> None:
    """With more streams allowed than the process has descriptors (``ulimit -n`` 100 here), the transport ends
    with an error that says so, not only httpx's "All connection attempts failed"."""
    script = tmp_path / "emfile_client.py"
    script.write_text(EMFILE_CLIENT)
    kids = Kids(300)
    async with serve(kids.handle) as served:
        with anyio.fail_after(60):
            result = await anyio.run_process(
                [sys.executable, str(script), served.url, anyio_backend, "100"], check=False
            )
    out = result.stdout.decode()
    failure = next(line for line in out.splitlines() if line.startswith("FAILURE"))
    assert "RemoteTransportError" in failure, out
    assert "too many open files (EMFILE" in failure and "ulimit -n 100" in failure, out
