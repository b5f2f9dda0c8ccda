"""``ClientConnection``'s surface reads as a table of contents (issue 54): at most 30 public members, each other
concern behind one attribute (``agent``, ``auth``, ``providers``, ``reconnection``, ``tools``).

Statically: the count, no name of the flat surface it replaced left behind (0.x: renamed, no aliases), and
docs/client.md's table naming every member of each group. On a live connection to the reference agent (real
pipes, asyncio and trio): each group is reachable, the same object each time, and answers from that connection.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.client import (
    AgentView,
    Authentication,
    ClientConnection,
    ClientTools,
    ModelProviders,
    Reconnection,
)

AGENT = [sys.executable, "-m", "acp_conformance.agent", "--preview"]
CLIENT_GUIDE = Path(__file__).parents[2] / "docs" / "client.md"

MAX_PUBLIC_MEMBERS = 30
GROUPS: dict[str, type] = {
    "agent": AgentView,
    "auth": Authentication,
    "providers": ModelProviders,
    "reconnection": Reconnection,
    "tools": ClientTools,
}
# The flat names the groups replaced (CHANGELOG, 0.x): none may come back as an alias.
MOVED = [
    "agent_capabilities",
    "agent_info",
    "auth_methods",
    "auth_state",
    "auth_status",
    "authenticate",
    "capability_record",
    "disable_provider",
    "file_system",
    "initialize_response",
    "list_providers",
    "login",
    "login_methods",
    "logout",
    "on_reconnect",
    "protocol_version",
    "pushes_auth_status",
    "reconnect_policy",
    "reconnecting",
    "reconnects",
    "require",
    "set_provider",
    "supports",
    "system_prompt_modes",
    "terminals",
    "tools_over_mcp_transport",
]


def _public(cls: type) -> list[str]:
    return [name for name in dir(cls) if not name.startswith("_")]


def test_client_connection_has_at_most_30_public_members() -> None:
    public = _public(ClientConnection)
    assert len(public) <= MAX_PUBLIC_MEMBERS, public
    assert set(GROUPS) <= set(public)


def test_no_moved_name_is_left_on_the_connection() -> None:
    assert not set(MOVED) & set(_public(ClientConnection))


def test_the_client_guide_lists_every_member_of_each_group() -> None:
    text = CLIENT_GUIDE.read_text(encoding="utf-8")
    for attribute, cls in GROUPS.items():
        row = re.search(rf"^\| `client\.{attribute}` \|(.*)\|$", text, re.MULTILINE)
        assert row is not None, f"docs/client.md has no row for client.{attribute}"
        named = set(re.findall(r"`([a-z_]+)(?:\(|`)", row.group(1)))
        assert set(_public(cls)) <= named, (attribute, sorted(set(_public(cls)) - named))


@pytest.mark.anyio
async def test_each_group_is_reachable_and_reads_its_connection(tmp_path: Path) -> None:
    events: list[object] = []
    with anyio.fail_after(30):
        async with ClientBuilder("t", "1").with_file_system().spawn(AGENT) as client:
            for attribute, cls in GROUPS.items():
                group = getattr(client, attribute)
                assert isinstance(group, cls) and getattr(client, attribute) is group, attribute

            assert client.agent.info.name == "acp-reference-agent"
            assert client.agent.initialize_response is not None
            assert client.agent.supports("session/new") and client.agent.supports("providers/list")
            assert "append" in client.agent.system_prompt_modes

            assert client.auth.state is None
            status = await client.auth.status()
            assert client.auth.state is not None and client.auth.state.state == status.state

            assert [p.provider_id for p in await client.providers.list()] == ["reference"]

            assert client.reconnection.policy is None  # off by default for a subprocess agent
            assert (client.reconnection.count, client.reconnection.in_progress) == (0, False)
            remove = client.reconnection.on_event(events.append)
            remove()

            assert client.tools.file_system is not None and client.tools.terminals is None
            assert client.tools.mcp_transport in ("acp", "stdio")  # a v2 agent reaches the files as MCP
            session = await client.new_session(tmp_path)
            assert client.session(session.session_id) == session
    assert events == []
