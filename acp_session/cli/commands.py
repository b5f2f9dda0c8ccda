"""The subcommands run on a ``ChatApp``: ``chat``, ``resume``, ``login``, ``sessions``."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from typing import Any

import anyio

from acp_session.client import ClientConnection
from acp_session.conversation import Conversation
from acp_session.errors import AcpError

from .app import ChatApp
from .exits import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from .login import EXIT_AUTH, pick_method
from .render import JsonRenderer

__all__ = ["chat", "login", "resume", "sessions"]


def _prompt_text(words: Sequence[str]) -> str | None:
    text = " ".join(words)
    return text if words else None


async def chat(app: ChatApp) -> int:
    args = app.args

    async def body(client: ClientConnection) -> int:
        conversation = await client.start_conversation(args.cwd)
        return await app.loop(conversation, _prompt_text(args.prompt))

    return await app.run(body)


async def resume(app: ChatApp) -> int:
    args = app.args

    async def body(client: ClientConnection) -> int:
        cwd = args.cwd_given
        if cwd is None:
            cwd = args.cwd
            try:
                async for info in client.list_sessions():
                    if info.session_id == args.session_id:
                        cwd = info.cwd
                        break
            except AcpError:
                pass  # no session/list: use --cwd's default
        conversation = await Conversation.resume(client, args.session_id, cwd)
        app.renderer.history(conversation.history())
        return await app.loop(conversation, _prompt_text(args.prompt))

    return await app.run(body)


async def login(app: ChatApp) -> int:
    """Run one of the agent's login methods: over ACP (``authenticate``), or its own terminal login command."""
    args = app.args
    argv = args.agent_argv
    terminal: list[tuple[str, ...]] = []

    async def body(client: ClientConnection) -> int:
        try:
            method = pick_method(client.login_methods, args.method)
        except ValueError as exc:
            print(f"acp-session: {exc}", file=sys.stderr)
            return EXIT_USAGE
        command = method.terminal_command(argv)
        if command is not None or method.kind == "terminal":  # the agent's own login, in this terminal
            if command is None:
                print(f"acp-session: {method.method_id} is a terminal login without a command", file=sys.stderr)
                return EXIT_ERROR
            terminal.append(command)  # run once the connection is closed, with this terminal
            return EXIT_OK
        if method.kind == "env_var" and not any(os.environ.get(v) for v in method.env_vars):
            print(f"acp-session: set {' or '.join(method.env_vars)} in the environment first", file=sys.stderr)
            return EXIT_AUTH
        if not method.is_protocol_login:
            print(f"acp-session: no way to run a {method.kind!r} login ({method.method_id})", file=sys.stderr)
            return EXIT_ERROR
        await client.authenticate(method.method_id)
        app.renderer.info(f"logged in ({method.name})")
        return EXIT_OK

    code = await app.run(body)
    if terminal and code == EXIT_OK:
        app.renderer.info(f"running: {shlex.join(terminal[0])}")
        process = await anyio.run_process(list(terminal[0]), stdin=None, stdout=None, stderr=None, check=False)
        return process.returncode
    return code


async def sessions(app: ChatApp) -> int:
    args = app.args

    async def body(client: ClientConnection) -> int:
        rows = [info async for info in client.list_sessions(None if args.all else args.cwd)]
        if app.json:
            for info in rows:
                assert isinstance(app.renderer, JsonRenderer)
                app.renderer.emit({"event": "session", **_session_json(info)})
            return EXIT_OK
        if not rows:
            print("no sessions")
            return EXIT_OK
        for info in rows:
            title = info.title if isinstance(info.title, str) else ""
            updated = info.updated_at if isinstance(info.updated_at, str) else "-"
            print(f"{info.session_id:<12} {updated:<20} {info.cwd}  {title}")
        return EXIT_OK

    return await app.run(body)


def _session_json(info: Any) -> dict[str, Any]:
    from acp_session.codec import to_builtins

    data = to_builtins(info)
    return data if isinstance(data, dict) else {"sessionId": info.session_id}
