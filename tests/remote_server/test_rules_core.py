"""The sans-IO core of the library's server, which ``--listen`` runs on (``acp_session.server.rules``), and a
connection's bounds (``acp_session.server.connection``), without a server: routes of outbound messages, the
session-header rules, and what happens when a client does not read."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_session.server import connection as remote_connection
from acp_session.server.connection import ConnectionOverflow, RemoteConnection, StreamBusy
from acp_session.server.origins import OriginPolicy, normalize_origin
from acp_session.server.rules import CONNECTION, INITIAL, BadRequest, Inbound, OutboundRoutes, check_post, parse_post

from .conftest import AGENT


def _frame(message: dict[str, object]) -> bytes:
    return json.dumps(message).encode()


def test_answers_follow_their_requests_and_ids_keep_their_type() -> None:
    routes = OutboundRoutes()
    headers = {"acp-connection-id": "c", "acp-session-id": "s1"}
    prompt = {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": []}}
    routes.expect_answer(check_post(headers, prompt, _frame(prompt), {}))
    new = {"jsonrpc": "2.0", "id": "1", "method": "session/new", "params": {"cwd": "/"}}
    routes.expect_answer(check_post({"acp-connection-id": "c"}, new, _frame(new), {}))
    load = {"jsonrpc": "2.0", "id": 2, "method": "session/load", "params": {"sessionId": "s1", "cwd": "/"}}
    routes.expect_answer(check_post(headers, load, _frame(load), {}))
    assert routes.route(_frame({"jsonrpc": "2.0", "id": "1", "result": {}})) == CONNECTION
    assert routes.route(_frame({"jsonrpc": "2.0", "id": 1, "result": {}})) == ("session", "s1")
    # session/load: after its replay, on the same stream (the TypeScript SDK answers it on the connection's)
    assert routes.route(_frame({"jsonrpc": "2.0", "id": 2, "result": {}})) == ("session", "s1")
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}
    inbound = parse_post({}, _frame(init))
    assert not isinstance(inbound, dict) and inbound.route == INITIAL


def test_the_agents_requests_and_their_withdrawal_go_on_the_session_stream() -> None:
    routes = OutboundRoutes()
    ask = {"jsonrpc": "2.0", "id": 7, "method": "session/request_permission", "params": {"sessionId": "s2"}}
    assert routes.route(_frame(ask)) == ("session", "s2")
    withdraw = {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 7}}
    assert routes.route(_frame(withdraw)) == ("session", "s2")
    assert routes.route(_frame({"jsonrpc": "2.0", "method": "_x/hello", "params": {}})) == CONNECTION
    answer = {"jsonrpc": "2.0", "id": 7, "result": {}}
    with pytest.raises(BadRequest) as missing:
        check_post({}, answer, _frame(answer), routes.client_response_routes)
    assert missing.value.status == 400
    accepted = check_post({"acp-session-id": "s2"}, answer, _frame(answer), routes.client_response_routes)
    routes.expect_answer(accepted)
    assert routes.client_response_routes == {}  # settled


@pytest.mark.anyio
async def test_a_client_that_does_not_read_loses_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote_connection, "MAX_BUFFERED_BYTES", 1000)
    conn = RemoteConnection()
    update = _frame({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "pad": "x" * 300}})
    await conn._route([update, update])
    with pytest.raises(anyio.BrokenResourceError):
        await conn._route([update, update])
    assert conn.connection_stream.closed and conn.session_streams["s"].closed


@pytest.mark.anyio
async def test_session_streams_are_bounded_and_have_one_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote_connection, "MAX_SESSION_STREAMS", 3)
    conn = RemoteConnection()
    stream = conn.stream_for("a")
    with pytest.raises(StreamBusy):
        conn.stream_for("a")
    stream.release()
    conn.stream_for("a")
    conn.stream_for("b")
    conn.stream_for("c")
    with pytest.raises(ConnectionOverflow):
        conn.stream_for("d")
    assert conn.connection_stream.closed


def test_a_bad_listen_address_is_a_usage_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "acp_conformance.agent", "--listen", "nowhere"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "--listen wants HOST:PORT" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "acp_conformance.agent", "--tls-cert", "x.pem"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "go with --listen" in proc.stderr


def test_an_address_in_use_is_one_line_not_a_traceback() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for backend in ("asyncio", "trio"):
            argv = [*AGENT, "--listen", f"127.0.0.1:{port}", "--backend", backend]
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
            assert proc.returncode == 1 and not proc.stdout, proc.stderr
            assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr and "Traceback" not in proc.stderr


def test_tls_files_that_cannot_be_used_are_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "cert.pem").write_text("not a certificate\n")
    for cert, key in (
        (tmp_path / "missing.pem", tmp_path / "missing.pem"),
        (tmp_path / "cert.pem", tmp_path / "cert.pem"),
    ):
        proc = subprocess.run(
            [*AGENT, "--listen", "127.0.0.1:0", "--tls-cert", str(cert), "--tls-key", str(key)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 2 and not proc.stdout, proc.stderr
        assert "the TLS certificate or key cannot be used" in proc.stderr and "Traceback" not in proc.stderr


def test_origins_are_compared_normalized_and_loopback_ones_only_on_loopback() -> None:
    assert normalize_origin("HTTPS://App.Example:443") == "https://app.example"
    assert normalize_origin("http://[::1]:8080/") == "http://[::1]:8080"
    for not_an_origin in ("app.example", "http://app.example/path", "http://u:p@app.example", "http://h:99999"):
        assert normalize_origin(not_an_origin) is None, not_an_origin
    on_loopback = OriginPolicy.for_listening("127.0.0.1")
    assert on_loopback.allows(None) and on_loopback.allows("http://localhost:3000")
    assert on_loopback.allows("http://127.0.0.2") and on_loopback.allows("https://[::1]")
    assert not on_loopback.allows("http://evil.example") and not on_loopback.allows("null")
    assert OriginPolicy.for_listening("::1").loopback and OriginPolicy.for_listening("localhost").loopback
    # Listening beyond loopback, a loopback page is no more the server's own than any other site's.
    for host in ("0.0.0.0", "::", "192.168.1.5"):
        policy = OriginPolicy.for_listening(host, ["https://app.example"])
        assert policy.allows(None) and policy.allows("https://app.example")
        assert not policy.allows("http://localhost:3000") and not policy.allows("http://evil.example")
    assert OriginPolicy.for_listening("0.0.0.0", ["*"]).allows("http://evil.example")
    with pytest.raises(ValueError, match="--allow-origin wants an origin"):
        OriginPolicy.for_listening("127.0.0.1", ["app.example"])


def test_a_bad_allow_origin_is_a_usage_error() -> None:
    agent = [sys.executable, "-m", "acp_conformance.agent"]
    bad = ["--listen", "127.0.0.1:0", "--allow-origin", "https://app.example/path"]
    proc = subprocess.run([*agent, *bad], capture_output=True, text=True)
    assert proc.returncode == 2 and "--allow-origin wants an origin" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run([*agent, "--allow-origin", "*"], capture_output=True, text=True)
    assert proc.returncode == 2 and "go with --listen" in proc.stderr


_IDS = st.one_of(
    st.none(), st.integers(-3, 3), st.sampled_from(["1", "x", ""]), st.booleans(), st.just(2.5), st.just([1])
)
_PARAMS = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "sessionId": st.one_of(st.sampled_from(["s1", "s2"]), st.none(), st.integers(), st.just({"x": 1})),
            "requestId": _IDS,
            "update": st.just({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}),
        },
    ),
    st.sampled_from([None, [1], "text", 3]),
)
_MESSAGES = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.just("2.0"),
        "id": _IDS,
        "method": st.sampled_from(["session/update", "$/cancel_request", "session/request_permission", None, 3]),
        "params": _PARAMS,
        "result": st.just({}),
    },
)
_FRAMES = st.one_of(
    _MESSAGES.map(lambda m: json.dumps(m).encode()),
    st.sampled_from(
        [b"[1,2]", b"3", b"not json", b'{"id":1,"id":"2","method":"a","params":{"sessionId":"a","sessionId":"b"}}']
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_FRAMES, st.one_of(st.none(), _IDS)), max_size=30), st.booleans())
def test_routing_by_the_head_of_a_message_routes_as_the_whole_message_does(
    frames: list[tuple[bytes, object]], answers_on_connection: bool
) -> None:
    """``route`` reads only the fields routing needs (the update's content is skipped); its routes, and what it
    remembers of the agent's requests, are those of reading each message whole (``_route_message``)."""
    by_head, whole = (
        OutboundRoutes(answers_on_connection=answers_on_connection),
        OutboundRoutes(answers_on_connection=answers_on_connection),
    )
    for frame, client_request in frames:
        if client_request is not None:  # a client request forwarded first: its answer has a route to go back on
            inbound = Inbound({"id": client_request, "method": "x"}, b"", ("session", "s1"))
            by_head.expect_answer(inbound)
            whole.expect_answer(inbound)
        assert by_head.route(frame) == whole._route_message(frame)
    assert by_head.client_response_routes == whole.client_response_routes
