"""Client mode driver for the official Python SDK's client (``acp``, 0.12.1, protocol v1).

``python tests/conformance/py_sdk_client_driver.py AGENT...``: a thin editor on ``spawn_agent_process`` and
``ClientSideConnection``: initialize (the SDK's own protocol version), ``session/new`` in the current directory,
one prompt (``$ACP_CONFORMANCE_PROMPT``); in the ``cancel`` and ``cancel-pending`` scenarios ``session/cancel``
at the first agent text. Every permission request is approved (the first allow option), as an editor whose user
clicks "allow" would, except in ``cancel-pending``, where the handler waits (a user who has not decided);
then ``session/close`` and exit 0. Nothing works around the SDK: its wire traffic is what the checks judge. The
SDK has no permission policy (the app's handler decides), so in ``permission-policy`` the driver exits 77 at once,
as the driver contract says.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import acp
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse


class Editor:
    def __init__(self, scenario: str) -> None:
        self.scenario = scenario
        self.first_text = asyncio.Event()

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        if self.scenario == "cancel-pending":  # the user has not decided yet when they cancel the turn
            await asyncio.Event().wait()
        allow = [o.option_id for o in options if str(o.kind).startswith("allow")]
        outcome: Any = (
            AllowedOutcome(outcome="selected", option_id=allow[0]) if allow else DeniedOutcome(outcome="cancelled")
        )
        return RequestPermissionResponse(outcome=outcome)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if getattr(update, "session_update", None) == "agent_message_chunk":
            self.first_text.set()


async def main() -> int:
    agent = sys.argv[1:]
    scenario = os.environ.get("ACP_CONFORMANCE_SCENARIO", "basic")
    text = os.environ.get("ACP_CONFORMANCE_PROMPT", "hello")
    if scenario == "permission-policy":
        return 77  # no policy to apply: the SDK hands every request to the app
    editor = Editor(scenario)
    async with acp.spawn_agent_process(editor, agent[0], *agent[1:]) as (conn, _process):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        session = await conn.new_session(cwd=os.getcwd())
        turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[acp.text_block(text)]))
        if scenario in ("cancel", "cancel-pending"):
            await editor.first_text.wait()
            await conn.cancel(session_id=session.session_id)
        await turn
        await conn.close_session(session_id=session.session_id)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
