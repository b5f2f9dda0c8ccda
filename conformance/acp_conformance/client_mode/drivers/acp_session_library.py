"""Driver for acp-session's library: ``python -m acp_conformance.client_mode.drivers.acp_session_library AGENT...``.

An editor-like use of ``ClientBuilder`` and ``Conversation``: it approves every permission request (the
editor's user always says yes; the ``cancel`` scenario shows whether an approval can still follow a cancel),
cancels the turn at the first agent text in the ``cancel`` and ``cancel-pending`` scenarios (in the latter it
leaves permission requests unanswered, a user who has not decided yet), and disconnects (``session/close``) when
the turn is over. In ``permission-policy`` the policy it is given becomes a ``PermissionPolicy`` on the builder
(``allow=read deny=*``: reads allowed, everything else denied). Exit status 0 when the turn ended, 1 when the
agent went away first.

``--providers`` (before the agent's command) adds the library's providers, ``LocalFileSystem`` and
``LocalTerminals``: the client then advertises v1's fs and terminal capabilities and serves those calls.
"""

from __future__ import annotations

import os
import sys

import anyio

from acp_conformance.client_mode.policy import POLICY_VARIABLE, parse_policy
from acp_session import ClientBuilder, PermissionPolicy, PermissionRule
from acp_session.conversation import ChatText
from acp_session.errors import AcpError
from acp_session.schema.types import RequestPermissionRequest

SCENARIO = os.environ.get("ACP_CONFORMANCE_SCENARIO", "basic")


async def approve(request: RequestPermissionRequest) -> str | None:
    if SCENARIO == "cancel-pending":  # the user has not decided yet when they cancel the turn
        await anyio.sleep_forever()
    allow = [o.option_id for o in request.options if str(o.kind).startswith("allow")]
    return allow[0] if allow else None


def policy_of(rules: list[tuple[str, str]]) -> PermissionPolicy:
    """The library's policy for client mode's policy words: a rule per kind, ``*`` as the default."""
    kept: list[PermissionRule] = []
    for action, kind in rules:
        if kind == "*":
            return PermissionPolicy(tuple(kept), "allow" if action == "allow" else "deny", "client-mode policy")
        kept.append(PermissionRule("allow" if action == "allow" else "deny", kind))
    return PermissionPolicy(tuple(kept), "ask", "client-mode policy")


async def drive(agent: list[str]) -> int:
    scenario = SCENARIO
    prompt = os.environ.get("ACP_CONFORMANCE_PROMPT", "hello")
    builder = ClientBuilder("acp-session-conformance-driver", "1.0").on_request_permission(approve)
    if scenario == "permission-policy":
        builder.permission_policy(policy_of(parse_policy(os.environ.get(POLICY_VARIABLE, ""))))
    if agent[:1] == ["--providers"]:
        agent = agent[1:]
        builder = builder.with_file_system().with_terminals().tools_over_mcp(False)
    async with builder.spawn(agent) as client:
        conversation = await client.start_conversation(os.getcwd())
        cancelled = False
        async for event in conversation.chat(prompt):
            if scenario in ("cancel", "cancel-pending") and not cancelled and isinstance(event, ChatText):
                cancelled = True
                await conversation.cancel()
        await conversation.disconnect(timeout=5)
    return 0


def main() -> None:
    try:
        status = anyio.run(drive, sys.argv[1:])
    except (AcpError, OSError) as exc:  # the agent went away: say so in one line
        print(f"acp-session driver: {type(exc).__name__}: {exc}", file=sys.stderr)
        status = 1
    sys.exit(status)


if __name__ == "__main__":
    main()
