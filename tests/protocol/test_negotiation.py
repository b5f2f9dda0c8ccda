"""Version negotiation at ``initialize``: the answer's version is read first and picks the adapter."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest

from acp_session import ClientBuilder, ProtocolVersionMismatch
from acp_session.errors import InvalidParams, InvalidResponse
from acp_session.schema import AuthMethodAgent, AuthMethodTerminal
from tests.protocol.support import sent, v1_agent

pytestmark = pytest.mark.anyio


async def test_a_v1_answer_continues_in_v1_with_the_v1_fields_mapped(tmp_path: Path) -> None:
    init = {
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": True},
            "sessionCapabilities": {"list": {}, "close": {}},
        },
        "authMethods": [
            {"id": "login", "name": "Log in", "description": "with a browser"},
            {"id": "tty", "name": "Terminal", "type": "terminal", "args": ["--login"]},
        ],
        "agentInfo": {"name": "old-agent", "version": "0.9", "title": "Old Agent"},
    }
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, initialize=init) as (client, log):
            assert client.protocol_version == 1
            assert (client.agent_info.name, client.agent_info.version, client.agent_info.title) == (
                "old-agent",
                "0.9",
                "Old Agent",
            )
            session = client.agent_capabilities.session
            assert session is not None and session.prompt is not None and session.mcp is not None
            assert session.prompt.image is not None and session.prompt.embedded_context is not None
            assert session.prompt.audio in (None, msgspec.UNSET)
            assert session.mcp.http is not None and session.mcp.stdio is not None
            methods = client.auth_methods
            assert isinstance(methods[0], AuthMethodAgent) and methods[0].method_id == "login"
            assert isinstance(methods[1], AuthMethodTerminal) and methods[1].method_id == "tty"
            assert client.supports("session/list") and client.supports("session/close")
            assert not client.supports("session/delete")
    offer = sent(log)[0]["params"]
    # One offer that both versions can read: v2's fields plus v1's clientCapabilities / clientInfo.
    assert offer["protocolVersion"] == 2
    assert offer["info"]["name"] == "test-client" and offer["clientInfo"]["name"] == "test-client"
    assert offer["clientCapabilities"] == {"fs": {}, "terminal": False}


async def test_an_agent_rejecting_the_v2_offer_gets_a_v1_offer_on_the_same_connection(tmp_path: Path) -> None:
    rejection = {"code": -32602, "message": "Invalid params"}
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, reject_v2=rejection) as (client, log):
            assert client.protocol_version == 1
            await client.new_session(str(tmp_path))
    messages = sent(log)
    assert [m.get("method") for m in messages[:3]] == ["initialize", "initialize", "session/new"]
    second = messages[1]["params"]
    assert second["protocolVersion"] == 1 and "info" not in second and second["clientInfo"]["name"] == "test-client"


async def test_the_rejection_is_raised_when_v1_is_not_allowed(tmp_path: Path) -> None:
    rejection = {"code": -32602, "message": "Invalid params"}
    with anyio.fail_after(10), pytest.raises(InvalidParams):
        async with v1_agent(tmp_path, ClientBuilder().protocol_versions(2), reject_v2=rejection):
            pass


async def test_version_2_in_the_v1_shape_is_named_as_such(tmp_path: Path) -> None:
    init = {"protocolVersion": 2, "agentCapabilities": {}, "agentInfo": {"name": "confused", "version": "1"}}
    with anyio.fail_after(10), pytest.raises(InvalidResponse, match="protocolVersion 2 but in the version 1 shape"):
        async with v1_agent(tmp_path, initialize=init):
            pass


async def test_a_version_nobody_speaks_names_the_agent_and_both_sides(tmp_path: Path) -> None:
    init = {"protocolVersion": 7, "agentInfo": {"name": "future-agent", "version": "9"}}
    with anyio.fail_after(10), pytest.raises(ProtocolVersionMismatch) as info:
        async with v1_agent(tmp_path, initialize=init):
            pass
    assert info.value.supported == [7] and info.value.requested == 2 and info.value.agent == "future-agent"
    assert "future-agent" in str(info.value) and "[2, 1]" in str(info.value)


async def test_pinning_version_1_offers_only_v1(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, ClientBuilder("pinned", "2").protocol_versions(1)) as (client, log):
            assert client.protocol_version == 1
    offer = sent(log)[0]["params"]
    assert offer == {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {}, "terminal": False},
        "clientInfo": {"name": "pinned", "version": "2"},
    }


async def test_a_result_without_a_version_is_an_invalid_response(tmp_path: Path) -> None:
    with anyio.fail_after(10), pytest.raises(InvalidResponse, match="no integer protocolVersion"):
        async with v1_agent(tmp_path, initialize={"agentInfo": {"name": "x", "version": "1"}}):
            pass


def test_protocol_versions_are_checked() -> None:
    with pytest.raises(ValueError, match="protocol versions"):
        ClientBuilder().protocol_versions(3)
    with pytest.raises(ValueError, match="protocol versions"):
        ClientBuilder().protocol_versions()
    assert ClientBuilder().protocol_versions(1, 2, 1).versions == (2, 1)


def test_file_system_and_terminals_are_advertised_only_with_a_provider(tmp_path: Path) -> None:
    plain = ClientBuilder().v1_initialize_request().client_capabilities
    assert plain.fs.read_text_file in (False, msgspec.UNSET) and plain.terminal is False  # type: ignore[union-attr]
    both = ClientBuilder().with_file_system([tmp_path], write=False).with_terminals().v1_initialize_request()
    caps = both.client_capabilities
    assert caps.fs.read_text_file is True and caps.fs.write_text_file is False  # type: ignore[union-attr]
    assert caps.terminal is True  # type: ignore[union-attr]
