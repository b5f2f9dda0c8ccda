"""Servers that misbehave on purpose: each ends in a typed error, soon, with bounded memory, and the client's
credentials appear in no error message. TLS (a throwaway CA from trustme) and redirects are checked here too."""

from __future__ import annotations

import resource
import ssl
from pathlib import Path
from typing import Any

import anyio
import pytest
import trustme
from anyio.abc import ByteStream

from acp_session import ClientBuilder
from acp_session.errors import RemoteHttpError
from acp_session.transport.remote import RemoteLimits, RemoteProtocolError, RemoteTransportError

from .hostile import Request, Served, initialize_answer, send, serve, ws_accept, ws_read_text, ws_text

pytestmark = pytest.mark.anyio

TOKEN = "hostile-secret-token-5678"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}
SMALL = RemoteLimits(max_message=256 * 1024, response_timeout=2.0, connect_timeout=5.0)
GIB = 1024**3
EVENTS_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"


async def connect_and_wait(url: str, limits: RemoteLimits = SMALL, **options: Any) -> BaseException:
    """Connect, then wait for the transport to end; the typed error it ended with."""
    try:
        async with ClientBuilder().connect_url(url, headers=HEADERS, limits=limits, **options) as client:
            await client.rpc.wait_closed()
            failure = getattr(client.rpc.transport, "failure", None)
            assert failure is not None
            return failure  # type: ignore[no-any-return]
    except (RemoteTransportError, RemoteHttpError) as exc:
        return exc


def stream_handler(body_chunk: bytes, total: int) -> Any:
    """Answers initialize, then sends ``body_chunk`` on the event stream until ``total`` bytes or a hang-up."""

    async def handle(stream: ByteStream, request: Request, served: Served, _: bytearray) -> bool:
        if request.method == "POST":
            await send(stream, served, initialize_answer(request))
            return True
        if request.method == "GET":
            await send(stream, served, EVENTS_HEAD)
            while served.sent < total:
                await send(stream, served, body_chunk)
        return False

    return handle


async def test_an_endless_sse_line(tmp_path: Path) -> None:
    async with serve(stream_handler(b"x" * 65536, GIB)) as served:
        with anyio.fail_after(30):
            error = await connect_and_wait(served.url)
    assert isinstance(error, RemoteProtocolError) and "a line" in str(error)
    assert served.sent < 64 * 1024 * 1024  # it stopped reading long before the gigabyte


async def test_a_gigabyte_event(tmp_path: Path) -> None:
    async with serve(stream_handler(b"data: " + b"y" * 1018 + b"\n", GIB)) as served:
        with anyio.fail_after(30):
            error = await connect_and_wait(served.url)
    assert isinstance(error, RemoteProtocolError) and "an event" in str(error)
    assert served.sent < 64 * 1024 * 1024


async def test_a_slowloris_server_times_out() -> None:
    async def drip(stream: ByteStream, request: Request, served: Served, _: bytearray) -> bool:
        for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n":
            await send(stream, served, bytes([byte]))
            await anyio.sleep(0.3)  # each byte well within a read timeout; the whole answer never
        return False

    async with serve(drip) as served:
        with anyio.fail_after(20):
            error = await connect_and_wait(served.url)
    assert isinstance(error, RemoteTransportError) and "did not answer in time" in str(error)


async def test_a_slowloris_event_stream_times_out() -> None:
    async def drip(stream: ByteStream, request: Request, served: Served, _: bytearray) -> bool:
        if request.method == "POST":
            await send(stream, served, initialize_answer(request))
            return True
        await anyio.sleep(60)  # the GET is never answered
        return False

    async with serve(drip) as served:
        with anyio.fail_after(20):
            error = await connect_and_wait(served.url)
    assert isinstance(error, RemoteTransportError) and "did not answer in time" in str(error)


async def test_a_server_that_echoes_the_token_is_redacted() -> None:
    async def echo(stream: ByteStream, request: Request, served: Served, _: bytearray) -> bool:
        body = f"denied: {request.headers.get('authorization')}".encode()
        await send(stream, served, b"HTTP/1.1 500 Oops\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        return False

    async with serve(echo) as served:
        with anyio.fail_after(20):
            error = await connect_and_wait(served.url)
            with_user = await connect_and_wait(served.url.replace("http://", "http://user:pw-secret-99@"))
    assert isinstance(error, RemoteHttpError) and error.status == 500
    assert error.body == "denied: [redacted]"
    assert TOKEN not in str(error)
    # Credentials in the URL go as Basic authentication (in place of the header): hidden in every form.
    assert isinstance(with_user, RemoteHttpError) and with_user.body == "denied: Basic [redacted]"
    assert "pw-secret-99" not in str(with_user) and "[redacted]@127.0.0.1" in str(with_user)


async def test_redirects_to_another_origin_are_not_followed() -> None:
    async def redirect(stream: ByteStream, request: Request, served: Served, _: bytearray) -> bool:
        moved = b"HTTP/1.1 307 Elsewhere\r\nLocation: http://127.0.0.2:9/acp\r\nContent-Length: 0\r\n\r\n"
        await send(stream, served, moved)
        return False

    async with serve(redirect) as served:
        with anyio.fail_after(20):
            error = await connect_and_wait(served.url)
    assert isinstance(error, RemoteTransportError) and "another origin" in str(error)
    assert len(served.requests) == 1


async def test_tls_is_verified_by_default(tmp_path: Path) -> None:
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))

    async def refuse(stream: ByteStream, request: Request, served: Served, _: bytearray) -> bool:
        await send(stream, served, b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\n\r\nno")
        return False

    async with serve(refuse, tls=server_context) as served:
        with anyio.fail_after(20):
            unverified = await connect_and_wait(served.url)
            trusted = await connect_and_wait(served.url, ca_file=str(ca_file))
            insecure = await connect_and_wait(served.url, insecure=True)
    assert isinstance(unverified, RemoteTransportError) and "CERTIFICATE_VERIFY_FAILED" in str(unverified)
    assert isinstance(trusted, RemoteHttpError) and trusted.status == 401  # the handshake succeeded
    assert isinstance(insecure, RemoteHttpError) and insecure.status == 401


async def test_a_huge_websocket_message_is_skipped_with_bounded_memory() -> None:
    size = 256 * 1024 * 1024

    async def huge(stream: ByteStream, request: Request, served: Served, buffer: bytearray) -> bool:
        await send(stream, served, ws_accept(request))
        initialize = Request("WS", {}, await ws_read_text(stream, buffer))
        await send(stream, served, ws_text(b"", length=size))
        chunk = b"z" * (1024 * 1024)
        for _ in range(size // len(chunk)):
            await send(stream, served, chunk)
        answer = initialize_answer(initialize).partition(b"\r\n\r\n")[2]
        await send(stream, served, ws_text(answer))
        await anyio.sleep(30)
        return False

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    async with serve(huge) as served:
        limits = RemoteLimits(max_message=64 * 1024, response_timeout=30.0)
        with anyio.fail_after(60):
            url = served.url.replace("http://", "ws://")
            async with ClientBuilder().connect_url(url, limits=limits, initialize_timeout=50) as client:
                assert client.agent.info.name == "hostile"  # the answer after the skipped message arrived
                assert client.rpc.bad_frames == 1
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert served.sent > size
    assert grown_kib < 128 * 1024  # never held the 256 MiB message


async def test_answers_naming_ten_thousand_sessions_open_no_streams() -> None:
    """A server cannot make the client open a stream per session it invents: only the answers to our own
    session/new and session/fork open one."""
    flooded = anyio.Event()
    new_session: list[Any] = []

    async def flood(stream: ByteStream, request: Request, served: Served, _: bytearray) -> bool:
        if request.method == "POST" and request.json().get("method") == "initialize":
            await send(stream, served, initialize_answer(request))
            return True
        if request.method == "POST":
            await send(stream, served, b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
            new_session.append(request.json())
            return True
        if request.method == "GET" and "acp-session-id" in request.headers:
            await send(stream, served, EVENTS_HEAD)
            await anyio.sleep(30)
        elif request.method == "GET":
            await send(stream, served, EVENTS_HEAD)
            for n in range(10_000):
                answer = f'{{"jsonrpc":"2.0","id":{1000 + n},"result":{{"sessionId":"fake-{n}"}}}}'
                await send(stream, served, f"data: {answer}\n\n".encode())
            flooded.set()
            while not new_session:
                await anyio.sleep(0.01)
            answer = f'{{"jsonrpc":"2.0","id":{new_session[0]["id"]},"result":{{"sessionId":"real-1"}}}}'
            await send(stream, served, f"data: {answer}\n\n".encode())
            await anyio.sleep(30)
        return False

    async with serve(flood) as served:
        with anyio.fail_after(30):
            async with ClientBuilder().connect_url(served.url, limits=SMALL) as client:
                await flooded.wait()
                conversation = await client.start_conversation("/")  # read after the whole flood
                assert conversation.session_id == "real-1"
                assert not client.rpc.closed
    gets = [r for r in served.requests if r.method == "GET"]
    # The connection's stream, and the one real session's: none of the 10 000 invented ones.
    assert [g.headers.get("acp-session-id") for g in gets] == [None, "real-1"]


async def test_an_event_that_is_not_utf8_is_reported_and_the_stream_goes_on() -> None:
    async def garbled(stream: ByteStream, request: Request, served: Served, _: bytearray) -> bool:
        if request.method == "POST":
            await send(stream, served, initialize_answer(request))
            return True
        await send(stream, served, EVENTS_HEAD + b'data: {"bad": "\xff\xfe"}\r\n\r\n: ping\r\n\r\n')
        await anyio.sleep(30)
        return False

    async with serve(garbled) as served, ClientBuilder().connect_url(served.url, limits=SMALL) as client:
        with anyio.fail_after(10):
            while client.rpc.bad_frames == 0:
                await anyio.sleep(0.02)
        assert not client.rpc.closed


async def test_a_broken_websocket_frame_ends_the_transport_with_a_typed_error() -> None:
    """Our frame reader's rules hold on a real socket: a masked server frame after the answer to initialize
    closes the socket with 1002 and ends the transport, the messages before it still read."""
    closing: list[bytes] = []

    async def broken(stream: ByteStream, request: Request, served: Served, buffer: bytearray) -> bool:
        await send(stream, served, ws_accept(request))
        initialize = Request("WS", {}, await ws_read_text(stream, buffer))
        answer = initialize_answer(initialize).partition(b"\r\n\r\n")[2]
        await send(stream, served, ws_text(answer) + bytes([0x81, 0x80 | 4]) + b"mask" + b"\x00\x00\x00\x00")
        with anyio.move_on_after(10):
            while len(buffer) < 8:  # the client's close frame: 2 bytes, the mask, then the code
                buffer += await stream.receive()
        closing.append(bytes(buffer))
        return False

    async with serve(broken) as served:
        with anyio.fail_after(30):
            failure = await connect_and_wait(served.url.replace("http://", "ws://"))
    assert isinstance(failure, RemoteTransportError)
    assert "broke the protocol" in str(failure) and "masked" in str(failure)
    frame = closing[0]
    assert frame[0] == 0x88  # a close frame; its code, unmasked, is 1002
    code = bytes(b ^ frame[2 + i] for i, b in enumerate(frame[6:8]))
    assert code == (1002).to_bytes(2, "big")
