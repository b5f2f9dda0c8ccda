"""ClientBuilder and connect(): initialize, capabilities, auth, extension calls (issue 4, parts 1-2)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import CapabilityNotSupported, ClientBuilder, ProtocolVersionMismatch
from acp_session.client.connection import hub_of
from acp_session.errors import ConnectionClosed
from acp_session.schema.types import ElicitationFormMode, RequestPermissionRequest
from tests.client.support import assert_valid, methods, scripted, sent

pytestmark = pytest.mark.anyio


async def test_initialize_sends_version_info_and_derived_capabilities(tmp_path: Path) -> None:
    builder = ClientBuilder("editor", "3.1", title="Editor").on_elicitation(lambda r: None, modes=("form", "url"))
    with anyio.fail_after(5):
        async with scripted(tmp_path, builder, authMethods=[{"type": "agent", "methodId": "a", "name": "A"}]) as (
            client,
            log,
        ):
            assert client.agent.info.name == "scripted"
            assert client.protocol.version == 2
            assert [m.method_id for m in client.auth.methods] == ["a"]  # type: ignore[union-attr]
    init = sent(log)[0]
    assert init["method"] == "initialize"
    assert init["params"]["protocolVersion"] == 2
    assert init["params"]["info"] == {"name": "editor", "version": "3.1", "title": "Editor"}
    assert init["params"]["capabilities"] == {"elicitation": {"form": {}, "url": {}}}
    assert_valid(sent(log))


def test_capabilities_without_elicitation_handler_advertise_nothing() -> None:
    assert ClientBuilder().capabilities().elicitation is not None
    caps = ClientBuilder().with_terminal_auth().capabilities()
    assert not caps.elicitation and caps.auth is not None


async def test_other_version_raises_with_offer(tmp_path: Path) -> None:
    with anyio.fail_after(5), pytest.raises(ProtocolVersionMismatch) as info:
        async with scripted(tmp_path, version=3):
            pass
    assert info.value.supported == [3] and info.value.code == -32022
    assert "scripted" in str(info.value) and "[2, 1]" in str(info.value)  # the agent and both sides' versions


async def test_version_1_answer_raises_when_only_2_is_allowed(tmp_path: Path) -> None:
    with anyio.fail_after(5), pytest.raises(ProtocolVersionMismatch) as info:
        async with scripted(tmp_path, ClientBuilder().protocol_versions(2), version=1):
            pass
    assert info.value.supported == [1] and info.value.requested == 2


async def test_error_32022_carries_supported_versions(tmp_path: Path) -> None:
    error = {"code": -32022, "message": "no", "data": {"requested": 2, "supported": [3]}}
    with anyio.fail_after(5), pytest.raises(ProtocolVersionMismatch) as info:
        async with scripted(tmp_path, init_error=error):
            pass
    assert info.value.supported == [3] and info.value.requested == 2


async def test_repeat_initialize_rules(tmp_path: Path) -> None:
    with anyio.fail_after(5):
        async with scripted(tmp_path, fail_repeat_init=True) as (client, log):
            first = client.agent.initialize_response
            with pytest.raises(Exception, match="-32603"):
                await client.initialize()  # a failed repeat keeps the previous exchange
            assert client.agent.initialize_response is first
            await client.new_session("/tmp")
            with pytest.raises(Exception, match="before any other request"):
                await client.initialize()
    assert methods(log)[:3] == ["initialize", "initialize", "session/new"]
    assert_valid(sent(log))


async def test_repeat_initialize_replaces_agent_info(tmp_path: Path) -> None:
    with anyio.fail_after(5):
        async with scripted(tmp_path) as (client, _):
            assert client.agent.info.version == "0.1"
            await client.initialize()
            assert client.agent.info.version == "0.2"


async def test_login_and_logout_need_advertised_methods(tmp_path: Path) -> None:
    """ACP2-061, ACP2-062: never call auth/* without authMethods; ACP2-029: never log in with a terminal method."""
    with anyio.fail_after(5):
        async with scripted(tmp_path) as (client, log):
            with pytest.raises(CapabilityNotSupported):
                await client.auth.login("a")
            with pytest.raises(CapabilityNotSupported):
                await client.auth.logout()
        assert "auth/login" not in methods(log)
        auth = [
            {"type": "agent", "methodId": "a", "name": "A"},
            {"type": "terminal", "methodId": "t", "name": "T"},
        ]
        async with scripted(tmp_path, authMethods=auth) as (client, log):
            with pytest.raises(CapabilityNotSupported):
                await client.auth.login("t")
            with pytest.raises(ValueError):
                await client.auth.login("nope")
            await client.auth.login("a")
            await client.auth.logout()
    logins = [m for m in sent(log) if m.get("method") == "auth/login"]
    assert [m["params"]["methodId"] for m in logins] == ["a"]
    assert_valid(sent(log))


async def test_extension_requests_both_ways(tmp_path: Path) -> None:
    seen: list[Any] = []

    async def ping(params: Any) -> Any:
        return {"pong": params["n"]}

    builder = ClientBuilder().on_ext_request("_acme/ping", ping).on_ext_notification("_acme/note", seen.append)
    with pytest.raises(ValueError):
        builder.on_ext_request("acme/ping", ping)
    with anyio.fail_after(5):
        async with scripted(tmp_path, builder) as (client, log):
            assert await client.request("_acme/echo", {"x": 1}) == {"x": 1}
            with pytest.raises(ValueError):
                client.request("acme/echo", {})
            with pytest.raises(ValueError):
                await client.notify("nope", {})
            await client.notify("_acme/hello", {"y": 2})
            session = await client.new_session("/tmp")
            await session.send_prompt("ext")
            while not seen:
                await anyio.sleep(0.01)
    assert seen == [{"n": 2}]
    responses = [m for m in sent(log) if m.get("id") == "agent-1"]
    assert responses[0]["result"] == {"pong": 1}
    assert_valid(sent(log))


async def test_without_permission_handler_answers_cancelled_and_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "acp_session.client")
    with anyio.fail_after(5):
        async with scripted(tmp_path) as (client, log):
            session = await client.new_session("/tmp")
            await session.send_prompt("permission")
            while not any(m.get("id") == "agent-1" for m in sent(log)):
                await anyio.sleep(0.01)
    answer = next(m for m in sent(log) if m.get("id") == "agent-1")
    assert answer["result"] == {"outcome": {"outcome": "cancelled"}}
    assert "no permission handler" in caplog.text
    assert_valid(sent(log))


async def test_sync_and_async_handlers_get_generated_types(tmp_path: Path) -> None:
    """ACP2-005: answers carry the agent's own (string) ids; ACP2-025: only registered modes reach a handler."""
    got: list[Any] = []

    def sync_permission(request: RequestPermissionRequest) -> str:
        got.append(request)
        return "yes"

    async def async_elicitation(request: Any) -> Any:
        got.append(request)
        from acp_session.schema.types import ElicitationAcceptAction

        return ElicitationAcceptAction(content={"name": "Ada"})

    builder = (
        ClientBuilder()
        .on_request_permission(sync_permission)
        .on_elicitation(async_elicitation)
        .on_elicitation_complete(got.append)
    )
    with anyio.fail_after(5):
        async with scripted(tmp_path, builder) as (client, log):
            session = await client.new_session("/tmp")
            await session.send_prompt("permission")
            await session.send_prompt("elicit")
            while len([m for m in sent(log) if str(m.get("id", "")).startswith("agent-")]) < 2:
                await anyio.sleep(0.01)
            while len(got) < 3:
                await anyio.sleep(0.01)
    kinds = {type(g).__name__ for g in got}
    assert kinds == {"RequestPermissionRequest", "ElicitationFormMode", "CompleteElicitationNotification"}
    assert any(isinstance(g, ElicitationFormMode) for g in got)
    answers = {m["id"]: m["result"] for m in sent(log) if str(m.get("id", "")).startswith("agent-")}
    assert answers["agent-1"] == {"outcome": {"outcome": "selected", "optionId": "yes"}}
    assert answers["agent-2"] == {"action": "accept", "content": {"name": "Ada"}}
    assert_valid(sent(log))


async def test_leaving_the_context_stops_the_agent(tmp_path: Path) -> None:
    with anyio.fail_after(5):
        async with scripted(tmp_path) as (client, _):
            rpc = client.rpc
        assert rpc.closed
        with pytest.raises(ConnectionClosed):
            rpc.request("_acme/echo", {})


async def test_closing_the_rpc_first_with_a_connection_task_still_waiting(tmp_path: Path) -> None:
    """``Conversation.disconnect`` closes the rpc connection before the block is left; a task of the connection's
    task group still waiting then (the built-in MCP server's socket listener) must not make leaving the block
    raise the rpc scope's cancellation."""
    finished: list[str] = []
    with anyio.fail_after(10):
        async with scripted(tmp_path) as (client, _):
            hub_of(client).start_soon(anyio.sleep_forever)
            await anyio.sleep(0.05)
            with anyio.CancelScope(shield=True):
                await client.rpc.aclose()
        finished.append("left")
    assert finished == ["left"]
