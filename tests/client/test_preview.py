"""Preview (unstable schema) features against the reference agent over real pipes (asyncio and trio).

Turn usage on the idle ``state_update``, the whole capability record and ``supports()``, the gated Preview calls
(fork, set_title, system prompt, archive, status, auth status, providers), ``client.request`` for advertised
unstable methods, a prompt held at send time.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from acp_session import CapabilityNotSupported, ClientBuilder
from acp_session.conversation import ChatDone
from acp_session.schema import TextContent
from acp_session.schema import unstable as mu

pytestmark = pytest.mark.anyio

AGENT = [sys.executable, "-m", "acp_conformance.agent"]
PREVIEW = [*AGENT, "--preview"]
PREVIEW_METHODS = (
    "session/fork",
    "session/set_title",
    "session/archive",
    "session/unarchive",
    "session/status",
    "auth/status",
    "providers/list",
    "providers/set",
    "providers/disable",
)


async def test_turn_usage_on_idle_reaches_the_response_and_the_totals(tmp_path: Path) -> None:
    async with ClientBuilder("t", "1").spawn(AGENT) as client:
        conversation = await client.start_conversation(tmp_path)
        with anyio.fail_after(20):
            first = await conversation.chat_to_completion("/turn-usage")
            second = await conversation.chat_to_completion("/turn-usage")
        assert first.usage is not None and second.usage is not None
        assert (first.usage.total_tokens, first.usage.input_tokens, first.usage.output_tokens) == (150, 100, 40)
        assert first.usage.thought_tokens == 10 and first.usage.cached_read_tokens == 60
        assert first.usage.cached_write_tokens is None  # not reported stays unknown
        assert conversation.last_turn_usage == second.usage
        total = conversation.total_usage
        assert total is not None and (total.total_tokens, total.cached_read_tokens) == (300, 120)
        # A turn without usage leaves the response's usage unset and the totals unchanged.
        plain = await conversation.chat_to_completion("hello")
        assert plain.usage is None and conversation.total_usage == total


async def test_state_and_usage_meta_stay_readable(tmp_path: Path) -> None:
    seen: list[mu.UpdateSessionNotification] = []
    async with ClientBuilder("t", "1").on_session_update(seen.append).spawn(AGENT) as client:
        conversation = await client.start_conversation(tmp_path)
        with anyio.fail_after(20):
            await conversation.chat_to_completion("/turn-usage")
        assert conversation.state.state_meta == {"quota": {"remaining": 42}}
        usage = conversation.state.usage
        assert usage is not None and usage.used == 2400 and usage.meta == {"source": "reference"}
    idles = [n.update for n in seen if isinstance(n.update, mu.StateUpdate) and n.update.state == "idle"]
    assert idles and isinstance(idles[-1].usage, mu.Usage)  # on_session_update sees the usage too


async def test_capability_record_and_supports_read_every_method(tmp_path: Path) -> None:
    async with ClientBuilder("t", "1").spawn(PREVIEW) as client:
        record = client.agent.capability_record
        assert isinstance(record, mu.InitializeResponse)
        caps = record.capabilities
        assert isinstance(caps, mu.AgentCapabilities) and isinstance(caps.session, mu.SessionCapabilities)
        assert isinstance(caps.session.fork, mu.SessionForkCapabilities)
        assert client.agent.system_prompt_modes == {"append", "override"}
        for method in (*PREVIEW_METHODS, "session/new", "session/prompt", "session/delete"):
            assert client.agent.supports(method), method
        assert not client.agent.supports("auth/login")  # no auth methods advertised
        assert not client.agent.supports("no/such_method")
        assert client.agent.supports("_vendor/anything")
    async with ClientBuilder("t", "1").spawn(AGENT) as client:
        for method in PREVIEW_METHODS:
            assert not client.agent.supports(method), method
        assert client.agent.system_prompt_modes == frozenset()
        with pytest.raises(CapabilityNotSupported, match=r"session\.fork"):
            await client.fork_session("sess-1", tmp_path)
        with pytest.raises(CapabilityNotSupported, match=r"session\.systemPrompt"):
            await client.new_session(tmp_path, system_prompt="Be brief.")
        with pytest.raises(CapabilityNotSupported, match=r"auth\.status"):
            await client.auth.status()
        with pytest.raises(CapabilityNotSupported, match="providers"):
            await client.providers.list()
        with pytest.raises(CapabilityNotSupported, match=r"session\.fork"):
            client.request("session/fork", {"sessionId": "sess-1", "cwd": str(tmp_path)})
        session = await client.new_session(tmp_path)
        with pytest.raises(CapabilityNotSupported, match=r"session\.title"):
            await session.set_title("x")
        with pytest.raises(CapabilityNotSupported, match=r"session\.archive"):
            await session.archive()
        with pytest.raises(CapabilityNotSupported, match=r"session\.status"):
            await session.status()


async def test_fork_title_system_prompt_and_session_calls(tmp_path: Path) -> None:
    async with ClientBuilder("t", "1").spawn(PREVIEW) as client:
        with anyio.fail_after(30):
            conversation = await client.start_conversation(tmp_path, system_prompt="Answer in French.")
            reply = await conversation.chat_to_completion("/system")
            assert reply.text == "System prompt (append): Answer in French."
            await conversation.chat_to_completion("hello")
            stored = await conversation.session.set_title("  Greetings   chat ")
            assert stored == "Greetings chat"
            fork = await conversation.fork(tmp_path, system_prompt="Be terse.", system_prompt_mode="override")
            assert fork.session_id != conversation.session_id
            # The fork's history starts as the parent's, then each goes its own way.
            assert [m.text for m in fork.messages()] == [m.text for m in conversation.messages()]
            forked = await fork.chat_to_completion("/system")
            assert forked.text == "System prompt (override): Be terse."
            assert len(fork.messages()) == len(conversation.messages()) + 2
            status = await conversation.session.status()
            assert status.status == "open" and isinstance(status.state, mu.StateUpdate)
            await conversation.session.archive()
            await conversation.session.unarchive()
            # The raw route reaches advertised unstable methods, typed.
            raw = await client.request("session/set_title", {"sessionId": fork.session_id, "title": "Fork"})
            assert isinstance(raw, mu.SetSessionTitleResponse) and raw.title == "Fork"
            # A direct fork through the client, and one with an empty system prompt refused locally.
            other = await client.fork_session(conversation.session.session_id, tmp_path)
            assert other.session_id not in (conversation.session_id, fork.session_id)
            with pytest.raises(ValueError, match="non-empty"):
                await client.fork_session(conversation.session.session_id, tmp_path, system_prompt=[])


async def test_auth_status_and_its_notifications(tmp_path: Path) -> None:
    changes: list[mu.AuthStatusUpdateNotification] = []
    raw: list[object] = []
    builder = ClientBuilder("t", "1").on_auth_status(changes.append)
    builder.on_ext_notification("_auth/status_update", raw.append)
    async with builder.spawn(PREVIEW) as client:
        assert client.auth.state is None and client.auth.pushes_status
        status = await client.auth.status()
        assert status.state == "not_required"
        assert client.auth.state is not None and client.auth.state.state == "not_required"
        conversation = await client.start_conversation(tmp_path)
        with anyio.fail_after(20):
            await conversation.chat_to_completion("/auth-change")
        assert [c.state for c in changes] == ["unauthenticated", "authenticated"]
        state = client.auth.state
        assert state is not None and state.state == "authenticated"
        assert isinstance(state.accounts, list) and state.accounts[0].email == "user@example.invalid"
        assert state.accounts[0].label == "Reference user"
        assert isinstance(state.meta, dict) and state.meta["authStatus"]["kind"] == "account"  # nothing dropped
        assert raw == [{"authStatus": state.meta["authStatus"]}]  # the application's ext handler still runs


async def test_providers_list_set_disable(tmp_path: Path) -> None:
    async with ClientBuilder("t", "1").spawn(PREVIEW) as client:
        providers = await client.providers.list()
        assert [p.provider_id for p in providers] == ["reference"] and providers[0].current is None
        await client.providers.set("reference", "openai", "http://127.0.0.1:9/v1", headers={"x-test": "1"})
        (provider,) = await client.providers.list()
        assert isinstance(provider.current, mu.ProviderCurrentConfig)
        assert (provider.current.api_type, provider.current.base_url) == ("openai", "http://127.0.0.1:9/v1")
        await client.providers.disable("reference")
        (provider,) = await client.providers.list()
        assert provider.current is None


async def test_a_prompt_sent_into_a_busy_session_is_held_at_once(tmp_path: Path) -> None:
    async with ClientBuilder("t", "1").spawn(AGENT) as client:
        conversation = await client.start_conversation(tmp_path)
        with anyio.fail_after(30):
            first = conversation.chat("/slow 5")
            while conversation.state.state != "running":
                await anyio.sleep(0.01)
            second = conversation.session.send_tracked([TextContent(text="after")])
            assert second.status == "held"  # not "pending" until a later running update
            await first.result()
            await second.request


async def test_chat_done_carries_usage(tmp_path: Path) -> None:
    async with ClientBuilder("t", "1").spawn(AGENT) as client:
        conversation = await client.start_conversation(tmp_path)
        with anyio.fail_after(20):
            events = [event async for event in conversation.chat("/turn-usage")]
        done = events[-1]
        assert isinstance(done, ChatDone) and done.response.usage is not None
        assert done.response.usage.total_tokens == 150


async def test_a_v1_agents_preview_capabilities_are_mapped_into_the_record(tmp_path: Path) -> None:
    from tests.protocol.support import sent, v1_agent

    init = {
        "protocolVersion": 1,
        "agentCapabilities": {
            "sessionCapabilities": {"fork": {}, "title": {}, "systemPrompt": {}},
            "auth": {"status": {}},
        },
        "agentInfo": {"name": "v1-preview", "version": "1"},
    }
    answers = {
        "session/fork": {"sessionId": "forked", "modes": {"currentModeId": "a", "availableModes": []}},
        "session/set_title": {"title": "T"},
        "auth/status": {"state": "authenticated"},
    }
    with anyio.fail_after(20):
        async with v1_agent(tmp_path, initialize=init, answers=answers) as (client, log):
            assert client.protocol.version == 1
            session = client.agent.capability_record.capabilities
            assert isinstance(session, mu.AgentCapabilities) and isinstance(session.session, mu.SessionCapabilities)
            for method in ("session/fork", "session/set_title", "auth/status"):
                assert client.agent.supports(method), method
            for method in ("session/archive", "session/status", "providers/list"):
                assert not client.agent.supports(method), method
            assert client.agent.system_prompt_modes == {"append"}
            with pytest.raises(CapabilityNotSupported, match=r"session\.systemPrompt\.mode\.override"):
                await client.new_session(tmp_path, system_prompt="x", system_prompt_mode="override")
            parent = await client.new_session(tmp_path, system_prompt="Be brief.")
            fork = await client.fork_session(parent.session_id, tmp_path, system_prompt="Be brief.")
            assert fork.session_id == "forked"
            assert await fork.set_title("T") == "T"
            assert (await client.auth.status()).state == "authenticated"
    methods = {m.get("method"): m.get("params") for m in sent(log)}
    brief = {"mode": "append", "content": [{"type": "text", "text": "Be brief."}]}
    assert methods["session/new"]["systemPrompt"] == brief
    assert methods["session/fork"]["sessionId"] == "s1" and methods["session/fork"]["mcpServers"] == []


def test_the_agents_auth_status_extension_reads_as_the_schemas_state() -> None:
    from acp_session.protocol.capabilities import auth_status_change

    out = auth_status_change({"authStatus": {"kind": "none", "label": "Not logged in"}})
    assert (
        out is not None
        and out.state == "unauthenticated"
        and out.meta == {"authStatus": {"kind": "none", "label": "Not logged in"}}
    )
    schema_shape = auth_status_change({"state": "authenticated", "accounts": [{"label": "me", "active": True}]})
    assert schema_shape is not None and schema_shape.state == "authenticated"
    assert isinstance(schema_shape.accounts, list) and schema_shape.accounts[0].label == "me"
    assert auth_status_change(["not", "an", "object"]) is None and auth_status_change({"other": 1}) is None


async def test_a_prompt_echoed_by_user_message_chunks_is_joined_to_its_prompt(tmp_path: Path) -> None:
    from tests.conversation.chat_support import chat_agent_argv

    async with ClientBuilder("t", "1").spawn(chat_agent_argv(tmp_path, echo_chunks=True)) as client:
        conversation = await client.start_conversation("/w")
        with anyio.fail_after(20):
            first = await conversation.chat_to_completion("stream 2")
            await conversation.chat_to_completion("stream 1")
        assert first.text == "w0 w1 "
        # Each answered prompt met its echo: nothing lingers in session.prompts.
        assert conversation.session.prompts == []
        users = [m.text for m in conversation.messages() if m.role == "user"]
        assert users == ["stream 2", "stream 1"]
