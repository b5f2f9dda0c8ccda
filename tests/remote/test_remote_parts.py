"""The small parts of the remote transports: header checks, redaction, the dialer's choices, the missing extra."""

from __future__ import annotations

import builtins
import ssl
from typing import Any

import pytest

from acp_session import ClientBuilder
from acp_session.transport.remote import RemoteDialer, RemoteExtraMissing, parse_header, redact_url
from acp_session.transport.remote.redact import Redactor
from acp_session.transport.remote.routing import read_head

pytestmark = pytest.mark.anyio


def test_parse_header() -> None:
    assert parse_header("Authorization:  Bearer x ") == ("Authorization", "Bearer x")
    for bad, why in [
        ("no colon", "Name: value"),
        ("Bad Name: x", "invalid header name"),
        ("Acp-Connection-Id: x", "set by the transport"),
        ("Upgrade: h2c", "set by the transport"),
    ]:
        with pytest.raises(ValueError, match=why):
            parse_header(bad)
    with pytest.raises(ValueError, match="line break"):
        RemoteDialer("http://h/acp", headers={"X-A": "one\r\nX-B: two"})


def test_redaction() -> None:
    assert redact_url("https://me:pw@host:8443/acp?x=1") == "https://[redacted]@host:8443/acp?x=1"
    assert redact_url("https://host/acp") == "https://host/acp"
    redact = Redactor("https://me:longpassword@host/acp", [("Authorization", "Bearer tok-123456"), ("X-Other", "v")])
    assert redact("sent Bearer tok-123456 and tok-123456 and longpassword; v") == (
        "sent [redacted] and [redacted] and [redacted]; v"
    )


def test_dialer_choices() -> None:
    assert RemoteDialer("wss://h/acp").request_url == "https://h/acp"
    assert RemoteDialer("ws://h/acp").profile == "websocket"
    assert RemoteDialer("https://h/acp").http_versions() == (True, True)  # ALPN picks
    assert RemoteDialer("http://h/acp").http_versions() == (True, False)
    assert RemoteDialer("http://h/acp", http_version="2").http_versions() == (False, True)  # h2c prior knowledge
    assert RemoteDialer("https://h/acp").ssl_verify() is True
    assert RemoteDialer("https://h/acp", insecure=True).ssl_verify() is False
    context = ssl.create_default_context()
    assert RemoteDialer("https://h/acp", ssl_context=context).ssl_verify() is context
    assert "pw" not in repr(RemoteDialer("https://u:pw@h/acp"))
    for bad in ("ftp://h/acp", "http:///acp", "h/acp"):
        with pytest.raises(ValueError, match=r"http\(s\)://"):
            RemoteDialer(bad)


def test_read_head_routing_facts() -> None:
    head = read_head(b'{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1"}}')
    assert head is not None and (head.is_request, head.session, head.key) == (True, "s1", ("n", 3))
    answer = read_head(b'{"jsonrpc":"2.0","id":"a","result":{"sessionId":"s2"}}')
    assert answer is not None and (answer.is_response, answer.result_session) == (True, "s2")
    loose = read_head(b'{"jsonrpc":"2.0","method":"x","params":[1,2]}')
    assert loose is not None and loose.session is None and not loose.is_request
    assert read_head(b"[1]") is None and read_head(b"not json") is None


async def test_the_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def without_httpx(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "httpx" or name.startswith("httpx."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_httpx)
    with pytest.raises(RemoteExtraMissing, match=r"pip install 'acp-session\[remote\]'") as caught:
        async with ClientBuilder().connect_url("http://127.0.0.1:9/acp"):
            pass
    assert isinstance(caught.value, ImportError)
