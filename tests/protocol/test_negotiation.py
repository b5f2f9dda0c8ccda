"""Version negotiation at ``initialize``: the answer's version is read first and picks the adapter."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest

from acp_session import ClientBuilder, ProtocolVersionMismatch
from acp_session.errors import InvalidParams, InvalidResponse
from acp_session.schema import AuthMethodAgent, AuthMethodTerminal
from acp_session.schema import types as m
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
            assert client.protocol.version == 1
            assert (client.agent.info.name, client.agent.info.version, client.agent.info.title) == (
                "old-agent",
                "0.9",
                "Old Agent",
            )
            session = client.agent.capabilities.session
            assert session is not None and session.prompt is not None and session.mcp is not None
            assert session.prompt.image is not None and session.prompt.embedded_context is not None
            assert session.prompt.audio in (None, msgspec.UNSET)
            assert session.mcp.http is not None and session.mcp.stdio is not None
            methods = client.auth.methods
            assert isinstance(methods[0], AuthMethodAgent) and methods[0].method_id == "login"
            assert isinstance(methods[1], AuthMethodTerminal) and methods[1].method_id == "tty"
            assert client.agent.supports("session/list") and client.agent.supports("session/close")
            assert not client.agent.supports("session/delete")
    first, second = (m["params"] for m in sent(log)[:2])
    # The v2 offer in v2's shape alone (no v1 field at its root: extensibility.mdx), then, once the agent answered
    # 1, the v1 offer in v1's shape, so it learns what this client offers in its own terms.
    assert set(first) <= V2_INITIALIZE_FIELDS and first["protocolVersion"] == 2
    assert first["info"]["name"] == "test-client"
    assert second == {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {}, "terminal": False},
        "clientInfo": {"name": "test-client", "version": "1.0"},
    }


V2_INITIALIZE_FIELDS = frozenset(f.encode_name for f in msgspec.structs.fields(m.InitializeRequest))


async def test_a_v1_agent_gets_the_file_system_and_terminals_in_its_own_offer(tmp_path: Path) -> None:
    """What a v1 agent learns of the client is the v1 offer's: a file-system provider and terminals are
    advertised there, and the agent's calls are served."""
    (tmp_path / "notes.txt").write_text("hello\n")
    read = {"method": "fs/read_text_file", "params": {"sessionId": "s1", "path": str(tmp_path / "notes.txt")}}
    builder = ClientBuilder("test-client", "1.0").with_file_system([tmp_path]).with_terminals()
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, builder, prompts=[{"ask": read}]) as (client, log):
            session = await client.new_session(str(tmp_path))
            await session.send_prompt("read it").result()
    messages = sent(log)
    assert [m.get("method") for m in messages[:3]] == ["initialize", "initialize", "session/new"]
    assert "clientCapabilities" not in messages[0]["params"]
    caps = messages[1]["params"]["clientCapabilities"]
    assert caps["fs"] == {"readTextFile": True, "writeTextFile": True} and caps["terminal"] is True
    answer = next(m for m in messages if m.get("id") == "q1" and "method" not in m)
    assert answer["result"] == {"content": "hello\n"}


async def test_an_agent_refusing_a_second_initialize_keeps_the_first_and_is_served_no_fs(tmp_path: Path) -> None:
    """An agent that may be initialized only once answered the v2 offer with 1: that answer stands, and since
    the agent never saw the v1 offer's capabilities, the client does not serve fs/* (it answers -32601)."""
    read = {"method": "fs/read_text_file", "params": {"sessionId": "s1", "path": str(tmp_path / "notes.txt")}}
    builder = ClientBuilder("test-client", "1.0").with_file_system([tmp_path])
    once = {"code": -32600, "message": "already initialized"}
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, builder, reject_repeat=once, prompts=[{"ask": read}]) as (client, log):
            assert client.protocol.version == 1 and client.agent.info.name == "v1-script"
            session = await client.new_session(str(tmp_path))
            await session.send_prompt("read it").result()
    answer = next(m for m in sent(log) if m.get("id") == "q1" and "method" not in m)
    assert answer["error"]["code"] == -32601


async def test_an_agent_rejecting_the_v2_offer_gets_a_v1_offer_on_the_same_connection(tmp_path: Path) -> None:
    rejection = {"code": -32602, "message": "Invalid params"}
    with anyio.fail_after(10):
        async with v1_agent(tmp_path, reject_v2=rejection) as (client, log):
            assert client.protocol.version == 1
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
            assert client.protocol.version == 1
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


# -- the v1 offer, built as plain JSON without the v1 types (acp_session/protocol/v1_offer.py) ----------------------


def test_the_light_v1_offer_tables_match_the_adapter_and_the_schema() -> None:
    """``v1_offer`` repeats what it must not import: the v1 routes' advertised capabilities and the v1 fields."""
    from acp_session.protocol.v1.adapter import V1Protocol
    from acp_session.protocol.v1_offer import V1_ADVERTISED, V1_CAPABILITY_FIELDS, V1_IMPLEMENTATION_FIELDS
    from acp_session.schema.v1 import types as v1

    routes = {(route.advertises, route.when) for route in V1Protocol.routes if route.advertises is not None}
    assert routes == set(V1_ADVERTISED)

    def wire_fields(struct: type[msgspec.Struct]) -> frozenset[str]:
        return frozenset(field.encode_name for field in msgspec.structs.fields(struct))

    assert wire_fields(v1.ClientCapabilities) == V1_CAPABILITY_FIELDS
    assert wire_fields(v1.Implementation) == V1_IMPLEMENTATION_FIELDS


@pytest.mark.parametrize("files", [None, (True, True), (True, False), (False, True)])
@pytest.mark.parametrize("terminals", [False, True])
@pytest.mark.parametrize("extras", [False, True])
def test_the_v1_offer_is_what_the_v1_types_and_routes_give(
    tmp_path: Path, files: tuple[bool, bool] | None, terminals: bool, extras: bool
) -> None:
    """The plain offer survives a round trip through ``v1.InitializeRequest`` unchanged, and its ``fs`` /
    ``terminal`` flags are ``routes.advertised`` of the v1 adapter's table (what the client installs)."""
    from acp_session.protocol.negotiate import offer
    from acp_session.protocol.routes import advertised
    from acp_session.protocol.v1.adapter import V1Protocol
    from acp_session.schema.v1 import types as v1

    builder = ClientBuilder("offer", "2.0", title="Offer" if extras else None)
    if files is not None:
        builder.with_file_system([tmp_path], read=files[0], write=files[1])
    if terminals:
        builder.with_terminals()
    if extras:
        builder.on_elicitation(lambda request: None, modes=("form", "url")).with_meta({"x": 1})
        builder.with_terminal_auth()
    plain = offer(builder, 1)
    assert msgspec.to_builtins(msgspec.convert(plain, v1.InitializeRequest)) == plain
    assert plain == msgspec.to_builtins(builder.v1_initialize_request())
    caps = plain["clientCapabilities"]
    expected = advertised(V1Protocol.routes, builder.offer())
    assert caps["terminal"] == expected["terminal"]
    assert caps["fs"] == (expected["fs"] if files is not None else {})
    v2_offer = offer(builder, 2)  # v2's fields only, whatever versions the builder allows
    assert set(v2_offer) <= V2_INITIALIZE_FIELDS and "clientCapabilities" not in v2_offer
