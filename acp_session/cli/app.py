"""One CLI run (``ChatApp``): the agent started and watched, terminal input, Ctrl-C, permission questions and
the turns."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TextIO

import anyio
from anyio.abc import TaskGroup

from acp_session import __version__
from acp_session.client import ClientBuilder, ClientConnection
from acp_session.conversation import ChatDone, ChatError, Conversation
from acp_session.errors import AcpError, ConnectionClosed, InitializeTimeout
from acp_session.protocol.negotiate import DEFAULT_INITIALIZE_TIMEOUT
from acp_session.schema import (
    ContentBlock,
    PromptCapabilities,
    RequestPermissionRequest,
    SessionCapabilities,
    TextContent,
)

from ..auth import AuthenticationRequired
from .attach import attachment
from .exits import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, exit_code
from .login import EXIT_AUTH, auth_message, auth_record
from .parser import history_file
from .prompts import LineReader, choose_option, permission_question
from .render import JsonRenderer, Renderer, TerminalRenderer, color_enabled

__all__ = ["ChatApp"]


def _short_command(argv: Sequence[str], limit: int = 48) -> str:
    """The agent's command for the progress line: the program's name and its arguments, cut short."""
    text = shlex.join([os.path.basename(argv[0]), *argv[1:]])
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


class _Starting:
    """Shows on a terminal that the agent is being started ("starting <agent>… 5 s"), from the first second
    until it answered ``initialize``; nothing when stderr is not a terminal."""

    def __init__(self, argv: Sequence[str], out: TextIO) -> None:
        self.name = _short_command(argv)
        self.out = out
        self.done = anyio.Event()
        self.shown = False

    async def run(self) -> None:
        if not self.out.isatty():
            return
        seconds = 0
        while not self.done.is_set():
            with anyio.move_on_after(1):
                await self.done.wait()
            if self.done.is_set():
                return
            seconds += 1
            self.out.write(f"\r\x1b[Kstarting {self.name}\u2026 {seconds} s")
            self.out.flush()
            self.shown = True

    def stop(self) -> None:
        """Stop and erase the line at once (before anything else is printed)."""
        self.done.set()
        if self.shown:
            self.shown = False
            self.out.write("\r\x1b[K")
            self.out.flush()


_ATTACHED_AS = {
    "image": "as an image",
    "audio": "as audio",
    "embedded file": "embedded in the prompt",
    "link": "as a link to it (the agent takes no embedded files, or the file is big)",
}


class ChatApp:
    """One CLI run: the renderer, terminal input, Ctrl-C handling and the turns."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.json = bool(getattr(args, "json", False))
        self.renderer: Renderer = JsonRenderer() if self.json else TerminalRenderer()
        # Answers go to stdout; questions, prompts and progress to stderr (the terminal).
        self.question_out: TextIO = sys.stderr
        self.reader = LineReader(history_file=history_file(), prompt_out=sys.stderr)
        self.active: Conversation | None = None  # a turn is running on it
        self.cancel_requested = False
        self.at_prompt = False
        self.prompt_interrupted = False
        self.interrupted = False
        self._scope: anyio.CancelScope | None = None
        self._tg: TaskGroup | None = None

    def builder(self) -> ClientBuilder:
        builder = ClientBuilder("acp-session", __version__).on_request_permission(self.on_permission)
        # Protocol version 1 agents call the client for files and commands: only when asked, confined to the
        # session's directory.
        if getattr(self.args, "allow_files", False):
            builder.with_file_system()
        if getattr(self.args, "allow_terminal", False):
            builder.with_terminals()
        return builder

    # -- running -----------------------------------------------------------------------------------

    async def run(self, body: Callable[[ClientConnection], Awaitable[int]]) -> int:
        argv = self.args.agent_argv
        code = EXIT_INTERRUPTED
        with anyio.CancelScope() as scope:
            self._scope = scope
            async with anyio.create_task_group() as tg:
                self._tg = tg
                with anyio.open_signal_receiver(signal.SIGINT) as signals:
                    tg.start_soon(self._watch_signals, signals)
                    starting = _Starting(argv, sys.stderr)
                    tg.start_soon(starting.run)
                    limit = getattr(self.args, "init_timeout", DEFAULT_INITIALIZE_TIMEOUT) or None
                    try:
                        try:
                            # Its own process group: the terminal's Ctrl-C reaches only this CLI, which turns it
                            # into session/cancel instead of killing the agent.
                            async with self.builder().spawn(
                                argv,
                                own_process_group=True,
                                initialize_timeout=limit,
                                env_policy=getattr(self.args, "env", "inherit"),
                                pass_env=getattr(self.args, "pass_env", None) or (),
                            ) as client:
                                starting.stop()
                                code = await body(client)
                        finally:
                            starting.stop()
                    except InitializeTimeout as exc:
                        self.renderer.break_line()
                        print(f"acp-session: {exc} (--init-timeout SECONDS to wait longer)", file=sys.stderr)
                        code = EXIT_ERROR
                    except AuthenticationRequired as exc:
                        code = self.report_auth(exc, argv)
                    except BrokenPipeError:
                        raise  # stdout's reader went away: main() ends quietly
                    except (AcpError, OSError) as exc:
                        self.renderer.break_line()
                        print(f"acp-session: {type(exc).__name__}: {exc}", file=sys.stderr)
                        tail = getattr(exc, "stderr_tail", None)  # an initialize failure; ConnectionClosed shows it
                        if tail and not isinstance(exc, ConnectionClosed):
                            print(
                                "acp-session: the agent's last stderr lines: " + " | ".join(tail[-3:]), file=sys.stderr
                            )
                        code = EXIT_ERROR
                    tg.cancel_scope.cancel()
        if self.interrupted:
            self.renderer.break_line()
            print("acp-session: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        return code

    def report_auth(self, error: AuthenticationRequired, argv: Sequence[str]) -> int:
        """The agent wants a login: say how in a few lines (``--json``: an ``error`` record)."""
        self.renderer.break_line()
        if isinstance(self.renderer, JsonRenderer):
            self.renderer.emit(auth_record(error))
        print(auth_message(error, argv), file=sys.stderr)
        return EXIT_AUTH

    async def _watch_signals(self, signals: Any) -> None:
        async for _ in signals:
            if self.active is not None and not self.cancel_requested:
                self.cancel_requested = True
                self.renderer.info("^C cancelling the active work (Ctrl-C again to quit)")
                assert self._tg is not None
                self._tg.start_soon(self._cancel, self.active)
            elif self.at_prompt and not self.prompt_interrupted:
                self.prompt_interrupted = True
                sys.stderr.write("\n")  # after the typed text (and the echoed ^C)
                self.renderer.info("^C (Ctrl-C again or Ctrl-D to quit)")
                self.reader.redraw()
            else:
                self.interrupted = True
                if self._scope is not None:
                    self._scope.cancel()
                return

    async def _cancel(self, conversation: Conversation) -> None:
        try:
            await conversation.cancel()
        except Exception as exc:
            self.renderer.info(f"cancel failed: {exc}")

    # -- permission ----------------------------------------------------------------------------------

    async def on_permission(self, request: RequestPermissionRequest) -> str | None:
        options = list(request.options)
        title = request.title if isinstance(request.title, str) else "permission"
        described = [(o.option_id, o.name, str(o.kind)) for o in options]
        if self.args.yes:
            answer = choose_option(options, "allow_once") or choose_option(options, "allow_always")
        else:
            self.renderer.break_line()
            bold = not self.json and color_enabled(self.question_out)
            try:
                answer = await permission_question(request, self.reader, self.question_out, bold=bold)
            except anyio.get_cancelled_exc_class():
                self.renderer.break_line()
                self.question_out.write("(the question was withdrawn)\n")
                self.question_out.flush()
                raise
        self.renderer.permission(title, described, answer)
        return answer

    # -- turns ---------------------------------------------------------------------------------------

    def watch(self, conversation: Conversation) -> None:
        """Point the renderer at this conversation's terminals and context usage."""
        state = conversation.state
        if isinstance(self.renderer, TerminalRenderer):
            self.renderer.terminals = state.terminals.get
        elif isinstance(self.renderer, JsonRenderer):
            self.renderer.context = lambda: state.usage

    def _usage_changed(self, conversation: Conversation, seen: list[Any]) -> None:
        """Show the context usage when the agent reported a new one (``seen``: the last one shown)."""
        usage = conversation.state.usage
        if usage is None:
            return
        key = (usage.used, usage.size, None if usage.cost is None else (usage.cost.amount, usage.cost.currency))
        if seen and seen[0] == key:
            return
        seen[:] = [key]
        self.renderer.usage(usage)

    def prompt_blocks(self, client: ClientConnection, text: str) -> str | list[ContentBlock]:
        """The prompt: its text, then the ``--attach`` files (with the first prompt only)."""
        paths: list[str] = getattr(self.args, "attach", None) or []
        if not paths:
            return text
        self.args.attach = []
        session = client.agent_capabilities.session
        caps = session.prompt if isinstance(session, SessionCapabilities) else None
        blocks: list[ContentBlock] = [TextContent(text=text)]
        for path in paths:
            block, how = attachment(path, caps if isinstance(caps, PromptCapabilities) else None)
            blocks.append(block)
            self.renderer.info(f"attached {path} {_ATTACHED_AS[how]}")
        return blocks

    async def turn(self, conversation: Conversation, prompt: str) -> int:
        self.cancel_requested = False
        self.active = conversation
        self.watch(conversation)
        code = EXIT_ERROR
        usage = conversation.state.usage
        seen: list[Any] = []
        if usage is not None:  # reported before this turn: shown only when it changes
            seen.append(
                (usage.used, usage.size, None if usage.cost is None else (usage.cost.amount, usage.cost.currency))
            )
        try:
            turn = conversation.chat(self.prompt_blocks(conversation.connection, prompt))
            async for event in turn:
                if isinstance(event, (ChatDone, ChatError)):  # (the events carry no usage: shown at the end)
                    self._usage_changed(conversation, seen)
                self.renderer.event(event)
                if isinstance(event, ChatDone):
                    code = exit_code(event.response.stop_reason)
                elif isinstance(event, ChatError):
                    code = EXIT_ERROR
                    if isinstance(event.error, AuthenticationRequired):
                        print(auth_message(event.error, self.args.agent_argv), file=sys.stderr)
                        code = EXIT_AUTH
        finally:
            self.active = None
        return code

    def _prompt(self) -> str:
        """``> `` (bold on a colour terminal) where someone types; nothing when the lines come from a pipe."""
        if not self.reader.editing and not os.isatty(self.reader.fd):
            return ""
        out = sys.stdout if self.reader.editing else sys.stderr
        return "\x1b[1m> \x1b[0m" if not self.json and color_enabled(out) else "> "

    async def loop(self, conversation: Conversation, prompt: str | None) -> int:
        if prompt is not None:
            return await self.turn(conversation, prompt)
        if not self.json:
            self.renderer.info(
                f"session {conversation.session_id}: type a prompt; Ctrl-C cancels, Ctrl-D or :quit exits"
            )
        code = EXIT_OK
        while True:
            self.at_prompt = True
            self.renderer.break_line()
            line = await self.reader.readline(self._prompt())
            self.at_prompt = False
            self.prompt_interrupted = False
            if line is None:
                return code
            text = line.strip()
            if text in (":quit", ":exit", ":q"):
                return code
            if text:
                code = await self.turn(conversation, text)
