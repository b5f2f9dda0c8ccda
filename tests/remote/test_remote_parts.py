"""The small parts of the remote transports: header checks, redaction, the dialer's choices, the missing extra."""

from __future__ import annotations

import builtins
import ssl
from pathlib import Path
from typing import Any

import pytest
import trustme

from acp_session import ClientBuilder
from acp_session.transport.remote import RemoteDialer, RemoteExtraMissing, parse_header, redact_url, resolve_ca_file
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
    # "auto" is HTTP/1.1 over TLS too: httpcore's HTTP/2 stalls a stream behind another's idle read (dialer.py).
    assert RemoteDialer("https://h/acp").http_versions() == (True, False)
    assert RemoteDialer("https://h/acp", http_version="2").http_versions() == (False, True)  # h2 by ALPN
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


def test_a_ca_file_is_checked_when_the_dialer_is_made(tmp_path: Path) -> None:
    """A wrong --ca-file is a usage error at once, not a failed TLS handshake at the first request."""
    with pytest.raises(ValueError, match="does not exist"):
        RemoteDialer("https://h/acp", ca_file=str(tmp_path / "missing.pem"))
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    with pytest.raises(ValueError, match="is not a PEM certificate file"):
        RemoteDialer("https://h/acp", ca_file=str(tmp_path / "junk.pem"))
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    dialer = RemoteDialer("https://h/acp", ca_file=str(tmp_path / "ca.pem"))
    verify = dialer.ssl_verify()
    assert isinstance(verify, ssl.SSLContext) and len(verify.get_ca_certs()) == 1  # this CA only


def test_the_cli_ca_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", "/from/env.pem")
    assert resolve_ca_file("/given.pem") == "/given.pem"
    assert resolve_ca_file(None) == "/from/env.pem"  # as OpenSSL's tools and curl read it
    assert resolve_ca_file(None, insecure=True) is None
    monkeypatch.delenv("SSL_CERT_FILE")
    assert resolve_ca_file(None) is None


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
