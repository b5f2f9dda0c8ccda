"""Our remote client against ``acp-reference-agent --listen`` (hypercorn): whole turns over HTTP/1.1, h2c (prior
knowledge), HTTPS with HTTP/2 by ALPN (a throwaway trustme CA) and WebSocket; a permission, a subagent and a
cancel on each, in protocol v1 and v2 (``--listen`` negotiates as stdio does); the affinity cookie the server
requires; a session resumed over a new connection (v1: ``session/load``)."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import trustme

from acp_session import ClientBuilder, Conversation
from acp_session.schema.types import RequestPermissionRequest
from acp_session.transport.remote import RemoteDialer, cookie_names
from tests.remote_server.conftest import Server, start_server

__all__ = ["start_server"]

pytestmark = pytest.mark.anyio

Start = Callable[..., Server]


def allow(request: RequestPermissionRequest) -> str:
    return next(o.option_id for o in request.options if o.kind.startswith("allow"))


@pytest.fixture(params=["http/1.1", "h2c", "https-h2", "ws"])
def dialer(request: pytest.FixtureRequest, start_server: Start, tmp_path: Path, anyio_backend: Any) -> RemoteDialer:
    backend = anyio_backend if isinstance(anyio_backend, str) else anyio_backend[0]
    kind = str(request.param)
    if kind == "https-h2":
        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1")
        cert.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "server.pem"))
        cert.private_key_pem.write_to_path(str(tmp_path / "key.pem"))
        cert.cert_chain_pems[0].write_to_path(str(tmp_path / "cert.pem"))
        ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
        server = start_server(
            "--tls-cert", str(tmp_path / "cert.pem"), "--tls-key", str(tmp_path / "key.pem"), backend=backend
        )
        return RemoteDialer(server.url, ca_file=str(tmp_path / "ca.pem"), http_version="2")
    server = start_server("--require-cookie", backend=backend)
    if kind == "ws":
        return RemoteDialer("ws" + server.url.removeprefix("http"))
    return RemoteDialer(server.url, http_version="2" if kind == "h2c" else "1.1")


@pytest.mark.parametrize("version", [1, 2])
async def test_turns(dialer: RemoteDialer, tmp_path: Path, version: int) -> None:
    builder = ClientBuilder("acp-session-remote", "1.0").protocol_versions(version).on_request_permission(allow)
    async with builder.connect_url(dialer) as client:
        assert client.protocol.version == version
        conversation = await client.start_conversation(str(tmp_path))
        with anyio.fail_after(30):
            hello = await conversation.chat_to_completion("hello")
            assert hello.stop_reason == "end_turn" and hello.text
            permitted = await conversation.chat_to_completion("/permission")
            assert permitted.stop_reason == "end_turn"
            assert [c.status for c in permitted.tool_calls] == ["completed"]
            delegated = await conversation.chat_to_completion("/subagent")
            assert delegated.stop_reason == "end_turn"
            assert bool(conversation.subagents) == (version == 2)  # v1 has no word for a subagent
            turn = conversation.chat("/slow 200")
            await anyio.sleep(0.3)
            await conversation.cancel()
            assert (await turn).stop_reason == "cancelled"
        session_id = conversation.session_id
    if dialer.url.startswith("http://"):
        assert cookie_names(dialer.cookies)  # the server refuses requests without its cookie (--require-cookie)
    async with builder.connect_url(dialer) as client:  # a new connection finds the server's session
        with anyio.fail_after(30):
            resumed = await Conversation.resume(client, session_id, str(tmp_path))
            assert resumed.turn_count == 4, [(m.role, m.text[:30]) for m in resumed.messages()]
            assert (await resumed.chat_to_completion("again")).stop_reason == "end_turn"


async def test_https_needs_the_ca(start_server: Start, tmp_path: Path) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert.private_key_pem.write_to_path(str(tmp_path / "key.pem"))
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "cert.pem"))
    server = start_server("--tls-cert", str(tmp_path / "cert.pem"), "--tls-key", str(tmp_path / "key.pem"))
    context = ssl.create_default_context()
    ca.configure_trust(context)
    async with ClientBuilder().connect_url(server.url, ssl_context=context) as client:  # HTTP/1.1 ("auto")
        assert client.protocol.version == 2
    from acp_session.transport.remote import RemoteCertificateError

    for url in (server.url, "wss" + server.url.removeprefix("https")):  # its own type: a caller can say what to do
        with pytest.raises(RemoteCertificateError, match="CERTIFICATE_VERIFY_FAILED"):
            async with ClientBuilder().connect_url(url):
                pass


async def test_v1_files_and_commands_go_through_the_client_on_the_session_stream(
    dialer: RemoteDialer, tmp_path: Path
) -> None:
    # The agent's fs/* and terminal/* requests name the session, so they come on its stream (and our answers go
    # back with its Acp-Session-Id); the library's providers do the work.
    builder = ClientBuilder("acp-session-remote", "1.0").protocol_versions(1).with_file_system().with_terminals()
    async with builder.connect_url(dialer) as client:
        conversation = await client.start_conversation(str(tmp_path))
        with anyio.fail_after(30):
            edited = await conversation.chat_to_completion("/tool")
            assert edited.text == "I changed one line in example.txt."
            assert (tmp_path / "example.txt").read_text() == "new\n"  # written by the library's file system
            ran = await conversation.chat_to_completion("/terminal")
            assert ran.text == "The command printed: 4 passed"  # run by the library's terminal provider
