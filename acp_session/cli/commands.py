"""The subcommands run on a ``ChatApp``: ``chat``, ``resume``, ``login``, ``sessions``."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Sequence
from typing import Any

import anyio

from acp_session.client import ClientConnection
from acp_session.client_errors import CapabilityNotSupported
from acp_session.conversation import Conversation
from acp_session.errors import AcpError, RequestTimeout

from .app import ChatApp
from .daily import new_session_options, open_named, wrap_up_opening
from .exits import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from .login import DEFAULT_LOGIN_TIMEOUT, EXIT_AUTH, pick_method
from .messages import Failure
from .named_sessions import NamedSessions
from .recap import recap_lines
from .render_json import JsonRenderer
from .safe_text import terminal_safe
from .screen import say
from .session_info import local_time, session_info

__all__ = ["chat", "local_time", "login", "resume", "sessions"]


def _prompt_text(words: Sequence[str]) -> str | None:
    """The prompt from the command line; None: read it (``-``, or no words: stdin or the terminal)."""
    if not words or list(words) == ["-"]:
        return None
    return " ".join(words)


async def chat(app: ChatApp) -> int:
    args = app.args

    async def body(client: ClientConnection) -> int:
        if args.session_name is not None:  # --session NAME (cli/daily.py)
            opened = await open_named(app, client)
            if isinstance(opened, int):
                return opened
            conversation = opened
        elif args.continue_:
            session_id = await _latest_session(app, client)
            if session_id is None:
                app.report(
                    Failure(
                        f"there is no earlier session of this agent in {args.cwd} to continue; "
                        "start one with `acp-session chat`",
                        "NoSessionToContinue",
                    )
                )
                return EXIT_ERROR
            args.session_id = session_id
            conversation = await Conversation.resume(client, session_id, args.cwd, mcp_servers=app.mcp_servers(client))
            if not app.json:
                for line in recap_lines(conversation.history(), session_id):  # where you were (cli/recap.py)
                    app.renderer.info(line)
        else:
            options = new_session_options(app, client)  # --system-prompt
            if isinstance(options, Failure):
                app.report(options)
                return EXIT_USAGE
            conversation = await client.start_conversation(args.cwd, mcp_servers=app.mcp_servers(client), **options)
        ready = await wrap_up_opening(app, conversation)  # --fork, --model, --mode, --set
        if isinstance(ready, int):
            await _close(conversation)
            return ready
        conversation = ready
        code = await app.loop(conversation, _prompt_text(args.prompt), from_stdin=args.prompt == ["-"])
        await _close(conversation)
        return code

    return await app.run(body)


async def _close(conversation: Conversation) -> None:
    """Close the session the CLI opened or resumed (``session/close`` where the agent offers it; the session stays
    resumable, ``chat -c`` continues it): an agent keeps no live session per finished CLI run. Bounded, so a
    slow agent does not hold the exit; an agent already gone is no error."""
    # An agent that refuses or fails the close changes nothing: the run's outcome is already decided.
    with anyio.move_on_after(CLOSE_TIMEOUT), contextlib.suppress(AcpError):
        await conversation.disconnect(timeout=CLOSE_TIMEOUT)


CLOSE_TIMEOUT = 3.0
"""Seconds the CLI waits for ``session/close`` when it leaves."""


async def _latest_session(app: ChatApp, client: ClientConnection) -> str | None:
    """The session last updated in this directory by the agent's own list, else the one this CLI last used
    there with this agent."""
    try:
        rows = [info async for info in client.list_sessions(app.args.cwd) if info.cwd == app.args.cwd]
    except (AcpError, CapabilityNotSupported):
        rows = []
    if rows:
        latest = max(rows, key=lambda info: info.updated_at if isinstance(info.updated_at, str) else "")
        return latest.session_id
    return app.recent.latest(app.args.agent_key, app.args.cwd)


async def resume(app: ChatApp) -> int:
    args = app.args

    async def body(client: ClientConnection) -> int:
        named = NamedSessions().find(args.session_id, args.agent_key)  # resume NAME (chat --session NAME)
        if named is not None:
            args.session_id = named["session_id"]
        if args.system_prompt_text is not None and not args.fork:
            app.report(Failure("--system-prompt applies to a new or forked session: add --fork", "SystemPromptLate"))
            return EXIT_USAGE
        cwd = args.cwd_given if named is None else args.cwd_given or named.get("cwd")
        if cwd is None:
            cwd = args.cwd
            try:
                async for info in client.list_sessions():
                    if info.session_id == args.session_id:
                        cwd = info.cwd
                        break
            except AcpError:
                pass  # no session/list: use --cwd's default
        args.cwd = cwd
        conversation = await Conversation.resume(client, args.session_id, cwd, mcp_servers=app.mcp_servers(client))
        app.announce(conversation)
        app.renderer.history(conversation.history())
        ready = await wrap_up_opening(app, conversation)  # --fork, --model, --mode, --set
        if isinstance(ready, int):
            await _close(conversation)
            return ready
        if ready is not conversation:
            conversation = ready
            app.announce(conversation)
        prompt = _prompt_text(args.prompt)
        code = await app.loop(conversation, prompt, from_stdin=args.prompt == ["-"], announce=False, replayed=True)
        await _close(conversation)
        return code

    return await app.run(body)


async def login(app: ChatApp) -> int:
    """Run one of the agent's login methods: over ACP (``authenticate``), or its own terminal login command."""
    args = app.args
    argv = args.agent_argv
    terminal: list[tuple[str, ...]] = []

    def fail(message: str, kind: str) -> None:
        app.report(Failure(message, kind))

    async def body(client: ClientConnection) -> int:
        try:
            method = pick_method(client.auth.login_methods, args.method)
        except ValueError as exc:
            fail(str(exc), "UnknownLoginMethod")
            return EXIT_USAGE
        command = method.terminal_command(argv)
        if getattr(args, "url", None) and (command is not None or method.kind == "terminal"):
            fail(f"{method.method_id} is a terminal login: run it where the agent runs (--url)", "UnsupportedLogin")
            return EXIT_ERROR
        if command is not None or method.kind == "terminal":  # the agent's own login, in this terminal
            if command is None:
                fail(f"{method.method_id} is a terminal login without a command", "NoLoginCommand")
                return EXIT_ERROR
            terminal.append(command)  # run once the connection is closed, with this terminal
            _emit(app, {"event": "login", "method_id": method.method_id, "kind": method.kind, "command": command})
            return EXIT_OK
        if method.kind == "env_var" and not any(os.environ.get(v) for v in method.env_vars):
            fail(f"set {' or '.join(method.env_vars)} in the environment first", "MissingEnvironment")
            return EXIT_AUTH
        if not method.is_protocol_login:
            fail(f"no way to run a {method.kind!r} login ({method.method_id})", "UnsupportedLogin")
            return EXIT_ERROR
        limit = getattr(args, "login_timeout", DEFAULT_LOGIN_TIMEOUT) or None
        name = terminal_safe(method.name)
        app.renderer.info(
            f"acp-session: waiting for the agent to finish the login ({name}); {_until(limit, 'login-timeout')}"
        )
        try:
            await client.auth.login(method.method_id, timeout=limit)
        except RequestTimeout:
            fail(
                f"the agent did not finish the login within {limit:g} s (--login-timeout SECONDS to wait longer)",
                "LoginTimeout",
            )
            return EXIT_ERROR
        _emit(app, {"event": "login", "method_id": method.method_id, "kind": method.kind, "command": None})
        if not app.json:
            app.renderer.info(f"logged in ({method.name})")
        return EXIT_OK

    url = getattr(args, "url", None)
    if url:  # a remote agent may take its time to answer, or never: say what is awaited, and until when
        limit = getattr(args, "init_timeout", None) or None
        app.renderer.info(f"acp-session: connecting to the agent at {argv[0]}; {_until(limit, 'init-timeout')}")
    code = await app.run(body)
    if terminal and code == EXIT_OK:
        app.renderer.info(f"running: {shlex.join(terminal[0])}")
        process = await anyio.run_process(list(terminal[0]), stdin=None, stdout=None, stderr=None, check=False)
        code = process.returncode
        if code != EXIT_OK:
            fail(f"the login command exited with code {code}", "LoginFailed")
            return code
    if code == EXIT_OK:
        _emit(app, {"event": "done"})
    return code


def _until(limit: float | None, option: str) -> str:
    """When a wait of ``login`` ends, for the line it shows before a wait that may be long."""
    return f"giving up after {limit:g} s (--{option})" if limit else f"no time limit (--{option} 0)"


def _emit(app: ChatApp, record: dict[str, Any]) -> None:
    if isinstance(app.renderer, JsonRenderer):
        app.renderer.emit(record)


async def sessions(app: ChatApp) -> int:
    args = app.args

    if args.action is not None:  # sessions show|history ID|NAME (cli/session_info.py)
        return await app.run(lambda client: session_info(app, client))

    async def body(client: ClientConnection) -> int:
        rows = [info async for info in client.list_sessions(None if args.all else args.cwd)]
        if app.json:
            for info in rows:
                _emit(app, _session_json(info, app.recent.title(info.session_id)))
            _emit(app, {"event": "done"})
            return EXIT_OK
        if not rows:
            say(f"no sessions{'' if args.all else ' in ' + args.cwd}", sys.stdout)
            return EXIT_OK
        names = NamedSessions()
        table = [("ID", "NAME", "UPDATED", "DIRECTORY", "TITLE")]
        for info in rows:
            title = info.title if isinstance(info.title, str) and info.title else app.recent.title(info.session_id)
            session_id, cwd = terminal_safe(str(info.session_id)), terminal_safe(str(info.cwd))
            named = one_line(", ".join(names.names_of(info.session_id, args.agent_key)), 30) or "-"
            table.append((session_id, named, terminal_safe(local_time(info.updated_at)), cwd, one_line(title or "-")))
        widths = [max(len(row[i]) for row in table) for i in range(4)]
        for row in table:
            line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
            say(line + "  " + row[4], sys.stdout)
        return EXIT_OK

    return await app.run(body)


def one_line(text: str, limit: int = 60) -> str:
    """A title on one line of the table: whitespace runs as one space, control characters dropped, cut short."""
    text = " ".join(terminal_safe(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _session_json(info: Any, first_prompt: str | None) -> dict[str, Any]:
    title = info.title if isinstance(info.title, str) else None
    updated = info.updated_at if isinstance(info.updated_at, str) else None
    return {
        "event": "session",
        "session_id": info.session_id,
        "cwd": info.cwd,
        "title": title,
        "first_prompt": first_prompt,
        "updated_at": updated,
    }
