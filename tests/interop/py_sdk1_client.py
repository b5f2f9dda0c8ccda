"""A v2 client on the official Python SDK 1.0 (``acp.experimental.v2``, ``agent-client-protocol`` 1.0.0rc3) that
drives an agent through every step of a chat and prints a JSON summary; written here, for the interop tests.

It runs in the SDK's own environment (``tests/interop/py_sdk1.py``):

    python tests/interop/py_sdk1_client.py -- AGENT ARGS...   # the agent as a subprocess, over stdio
    python tests/interop/py_sdk1_client.py --url URL         # http(s):// Streamable HTTP, ws(s):// WebSocket

``--step-timeout S`` (default 20) bounds each step.

The agent is expected to behave as acp-reference-agent does (``/permission``, ``/slow N``, ``/thought``, the
config option ``mode``, held prompts). Output: ``{"steps": [{"name", "ok", "detail"}]}``; exit 1 when a step
failed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from acp import RequestError
from acp.experimental.v2 import connect_to_agent
from acp.experimental.v2 import schema as v2

STEP_TIMEOUT = [20.0]  # seconds per step (--step-timeout)


class Client:
    """The handlers the SDK calls: updates go to a queue per session; permission requests are answered as the
    running step says (``allow``, ``reject``, or ``hold``: never, until the agent withdraws it)."""

    def __init__(self) -> None:
        self.updates: dict[str, asyncio.Queue[Any]] = {}
        self.answer = "allow"
        self.asked: list[v2.RequestPermissionRequest] = []
        self.asked_event = asyncio.Event()
        self.withdrawn = 0

    def queue(self, session_id: str) -> asyncio.Queue[Any]:
        return self.updates.setdefault(session_id, asyncio.Queue())

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.queue(session_id).put_nowait(update)

    async def request_permission(
        self, session_id: str, title: str, options: list[v2.PermissionOption], **kwargs: Any
    ) -> v2.RequestPermissionResponse:
        self.asked.append(v2.RequestPermissionRequest(session_id=session_id, title=title, options=options))
        self.asked_event.set()
        if self.answer == "hold":
            try:
                await asyncio.Event().wait()  # the agent's $/cancel_request cancels this handler
            except asyncio.CancelledError:
                self.withdrawn += 1
                raise
        kind = "allow_once" if self.answer == "allow" else "reject_once"
        chosen = next(o.option_id for o in options if o.kind == kind)
        return v2.RequestPermissionResponse(outcome=v2.SelectedPermissionOutcomeVariant(option_id=chosen))


def text_of(updates: list[Any], kind: str = "agent_message_chunk") -> str:
    return "".join(u.content.text for u in updates if u.session_update == kind and u.content.type == "text")


async def until_idle(client: Client, session_id: str) -> list[Any]:
    """The session's updates up to and including the next idle ``state_update``."""
    seen = []
    while True:
        update = await client.queue(session_id).get()
        seen.append(update)
        if update.session_update == "state_update" and update.state == "idle":
            return seen


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


class Run:
    def __init__(self, conn: Any, client: Client, cwd: str) -> None:
        self.conn = conn
        self.client = client
        self.cwd = cwd
        self.steps: list[dict[str, Any]] = []

    async def step(self, name: str, body: Callable[[], Awaitable[Any]]) -> None:
        try:
            detail = await asyncio.wait_for(body(), STEP_TIMEOUT[0])
            self.steps.append({"name": name, "ok": True, "detail": detail})
        except BaseException as exc:  # a failed step is reported, the run goes on
            if isinstance(exc, KeyboardInterrupt):
                raise
            message = f"{type(exc).__name__}: {exc}"
            self.steps.append({"name": name, "ok": False, "detail": message, "trace": traceback.format_exc()})

    async def prompt(self, session_id: str, text: str) -> tuple[str, list[Any]]:
        answer = await self.conn.prompt(session_id=session_id, prompt=[v2.TextContentBlock(text=text)])
        return answer.message_id, await until_idle(self.client, session_id)

    async def session(self) -> str:
        created = await self.conn.new_session(cwd=self.cwd)
        return str(created.session_id)


async def chat(run: Run) -> None:
    conn, client = run.conn, run.client
    state: dict[str, Any] = {}

    async def initialize() -> Any:
        reply = await conn.initialize(protocol_version=2, info=v2.Implementation(name="sdk1-client", version="1"))
        check(reply.protocol_version == 2, f"protocol version {reply.protocol_version}")
        return {"agent": reply.info.name, "protocolVersion": reply.protocol_version}

    async def new_session() -> Any:
        created = await conn.new_session(cwd=run.cwd)
        state["sid"] = created.session_id
        modes = [o for o in created.config_options or [] if getattr(o, "config_id", None) == "mode"]
        check(len(modes) == 1, f"config options {created.config_options}")
        return {"sessionId": created.session_id, "mode": modes[0].current_value}

    async def echo() -> Any:
        message_id, updates = await run.prompt(state["sid"], "what is two plus two")
        users = [u for u in updates if u.session_update == "user_message"]
        check([u.message_id for u in users] == [message_id], f"user message ids {[u.message_id for u in users]}")
        idle = updates[-1]
        check(idle.stop_reason == "end_turn", f"stop reason {idle.stop_reason}")
        return text_of(updates)

    async def thought() -> Any:
        _, updates = await run.prompt(state["sid"], "/thought")
        thinking, text = text_of(updates, "agent_thought_chunk"), text_of(updates)
        check(bool(thinking) and bool(text), f"thought {thinking!r}, text {text!r}")
        return {"thought": thinking, "text": text}

    async def permission(answer: str) -> Any:
        client.answer = answer
        before = len(client.asked)
        _, updates = await run.prompt(await run.session(), "/permission")  # its own session: a stuck turn blocks none
        check(len(client.asked) == before + 1, "no permission request")
        statuses = [u.status for u in updates if u.session_update == "tool_call_update" and u.status]
        return {"statuses": statuses, "stopReason": updates[-1].stop_reason}

    async def config() -> Any:
        changed = await conn.set_config_option(config_id="mode", session_id=state["sid"], value="ask")
        current = {o.config_id: o.current_value for o in changed.config_options}
        try:
            await conn.set_config_option(config_id="mode", session_id=state["sid"], value="nonsense")
            refused = None
        except RequestError as error:
            refused = error.code
        _, updates = await run.prompt(state["sid"], "why")
        await conn.set_config_option(config_id="mode", session_id=state["sid"], value="code")
        return {"mode": current["mode"], "refused": refused, "text": text_of(updates)}

    async def cancel_streaming() -> Any:
        sid = await run.session()
        await conn.prompt(session_id=sid, prompt=[v2.TextContentBlock(text="/slow 200")])
        while True:  # the first chunk: the turn is streaming
            update = await client.queue(sid).get()
            if update.session_update == "agent_message_chunk":
                break
        await conn.cancel_session(session_id=sid)
        updates = await until_idle(client, sid)
        return {"stopReason": updates[-1].stop_reason}

    async def cancel_permission() -> Any:
        sid = await run.session()
        client.answer, client.asked_event = "hold", asyncio.Event()
        withdrawn = client.withdrawn
        await conn.prompt(session_id=sid, prompt=[v2.TextContentBlock(text="/permission")])
        await client.asked_event.wait()
        await conn.cancel_session(session_id=sid)
        updates = await until_idle(client, sid)
        for _ in range(50):  # the agent's $/cancel_request may come just after its idle
            if client.withdrawn > withdrawn:
                break
            await asyncio.sleep(0.02)
        statuses = [u.status for u in updates if u.session_update == "tool_call_update" and u.status]
        client.answer = "allow"
        return {"stopReason": updates[-1].stop_reason, "withdrawn": client.withdrawn - withdrawn, "statuses": statuses}

    async def held_prompts() -> Any:
        sid = await run.session()
        first = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[v2.TextContentBlock(text="/slow 10")]))
        first_id = (await first).message_id
        second = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[v2.TextContentBlock(text="held one")]))
        before_second = await until_idle(client, sid)  # the first turn ends before the second is inserted
        second_id = (await second).message_id
        after = await until_idle(client, sid)
        users = [u.message_id for u in after if u.session_update == "user_message"]
        check(users == [second_id], f"user messages after the first idle: {users}, second {second_id}")
        return {"first": text_of(before_second), "second": text_of(after), "distinct": first_id != second_id}

    async def list_sessions() -> Any:
        listed = await conn.list_sessions(cwd=run.cwd)
        return sorted(s.session_id for s in listed.sessions)

    async def close() -> Any:
        await conn.close_session(session_id=state["sid"])
        try:
            await conn.prompt(session_id=state["sid"], prompt=[v2.TextContentBlock(text="after close")])
            after = None
        except RequestError as error:
            after = error.code
        return {"promptAfterClose": after}

    await run.step("initialize", initialize)
    await run.step("session/new", new_session)
    await run.step("prompt", echo)
    await run.step("thought", thought)
    await run.step("permission allowed", lambda: permission("allow"))
    await run.step("permission rejected", lambda: permission("reject"))
    await run.step("config option", config)
    await run.step("cancel a streaming turn", cancel_streaming)
    await run.step("cancel with a pending permission", cancel_permission)
    await run.step("held prompt", held_prompts)
    await run.step("session/list", list_sessions)
    await run.step("session/close", close)


@contextlib.asynccontextmanager
async def connection(client: Client, argv: list[str], url: str | None) -> AsyncIterator[Any]:
    if url is not None:
        if url.startswith("ws"):
            from acp.ws import create_websocket_stream

            transport = await create_websocket_stream(url)
        else:
            from acp.http import create_http_stream

            transport = create_http_stream(url)
        conn = connect_to_agent(client, transport)
        try:
            yield conn
        finally:
            await conn.close()
        return
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=16 * 2**20
    )
    assert process.stdin is not None and process.stdout is not None
    conn = connect_to_agent(client, process.stdin, process.stdout)
    try:
        yield conn
    finally:
        await conn.close()
        with contextlib.suppress(ProcessLookupError):
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 5)
        except asyncio.TimeoutError:
            process.kill()
            await process.wait()


async def main(argv: list[str], url: str | None) -> int:
    client = Client()
    with tempfile.TemporaryDirectory() as cwd:
        async with connection(client, argv, url) as conn:
            run = Run(conn, client, cwd)
            await chat(run)
    print(json.dumps({"steps": run.steps}, indent=1))
    return 0 if all(step["ok"] for step in run.steps) else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="a remote agent instead of a command")
    parser.add_argument("--step-timeout", type=float, default=STEP_TIMEOUT[0], help="seconds per step")
    parser.add_argument("agent", nargs="*", help="the agent's command line, after --")
    args = parser.parse_args()
    STEP_TIMEOUT[0] = args.step_timeout
    if bool(args.url) == bool(args.agent):
        parser.error("give either --url or an agent command after --")
    sys.exit(asyncio.run(main(args.agent, args.url)))
