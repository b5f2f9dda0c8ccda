"""Issue 51 against hostile HTTP servers on 127.0.0.1: a server that sets cookies without end cannot grow the jar or
the ``Cookie`` header past RFC 6265's minimums (item 10)."""

from __future__ import annotations

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
