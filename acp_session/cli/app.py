"""One CLI run (``ChatApp``): the agent started and watched, terminal input, Ctrl-C, permission questions, the
status line and the turns; failures reported in plain words (``messages``)."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import IO, Any, TextIO

import anyio
from anyio.abc import TaskGroup

from acp_session import __version__
from acp_session.client import ClientBuilder, ClientConnection
from acp_session.codec import to_builtins
from acp_session.conversation import ChatDone, ChatError, Conversation
from acp_session.errors import AcpError, MethodNotFound
from acp_session.mcp.config import split_offered
from acp_session.mcp.servers import McpServerConfig
from acp_session.protocol.negotiate import DEFAULT_INITIALIZE_TIMEOUT
from acp_session.schema import (
    Command,
    ContentBlock,
    PromptCapabilities,
    RequestPermissionRequest,
    SessionCapabilities,
    TextContent,
)

from ..auth import AuthenticationRequired
from .asking import ask_permission
from .attach import attachment
from .daily import profile_environment, run_own_command, show_policy_decision, turn_timer
from .editor import EXIT_WORDS, EditorReader, editor_available, editor_wanted
from .exits import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNASKED, exit_code
from .login import EXIT_AUTH, auth_message, auth_record
from .markdown import markdown_available
from .messages import Failure, describe, error_record, failure_lines, stderr_tail_of
from .parser import history_file
from .prompts import LineReader
from .recap import continue_command
from .recent import RecentSessions, state_dir
from .record_file import open_record
from .remote import connect_remote, describe_remote
from .render import Renderer, TerminalRenderer, color_enabled
from .render_json import JsonRenderer
from .render_quiet import QuietRenderer
from .safe_text import terminal_safe
from .screen import say
from .session_options import OWN_COMMANDS, argument_completions
from .status import WORKING, StatusLine
from .typing_echo import typing_hidden

__all__ = ["ChatApp"]

LEAVE_WORDS = (*EXIT_WORDS, ":quit", ":exit", ":q", "exit", "quit")
"""Typed alone at the prompt, these end the interactive loop; they never reach the agent."""

EXTRA_HINT = (
    "acp-session: plain line input and plain text output; for multi-line editing, completion and Markdown "
    "install the cli extra: pip install 'acp-session[cli]'"
)


def _short_command(argv: Sequence[str], limit: int = 48) -> str:
    """The agent's command for the progress line: the program's name and its arguments, cut short."""
    text = shlex.join([os.path.basename(argv[0]), *argv[1:]])
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


_ATTACHED_AS = {
    "image": "as an image",
    "audio": "as audio",
    "embedded file": "embedded in the prompt",
    "link": "as a link to it (the agent takes no embedded files, or the file is big)",
}


class ChatApp:
    """One CLI run: the renderer, terminal input, Ctrl-C handling, the status line and the turns."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.json = bool(getattr(args, "json", False))
        self.quiet = bool(getattr(args, "quiet", False))  # --format quiet: only the final reply on stdout
        # Answers go to stdout; questions, prompts, progress and failures to stderr (the terminal).
        self.question_out: TextIO = sys.stderr
        self.status = StatusLine(sys.stderr)
        markdown = not self.json and color_enabled(sys.stdout) and markdown_available()
        self.renderer: Renderer = (
            JsonRenderer() if self.json else QuietRenderer() if self.quiet else TerminalRenderer(markdown=markdown)
        )
        self.renderer.before_output = self.status.clear
        self.renderer.stderr_tail = self._stderr_tail
        if isinstance(self.renderer, TerminalRenderer):
            renderer = self.renderer
            self.status.allowed = lambda: renderer.at_line_start
        self.recent = RecentSessions()
        self._hinted: set[str] = set()
        if not self.json and color_enabled(sys.stdout) and not markdown_available():
            self.hint_once("extra", EXTRA_HINT)  # Markdown would be rendered with it
        self.client: ClientConnection | None = None
        self.conversation: Conversation | None = None
        self._reader: LineReader | EditorReader | None = None
        self.active: Conversation | None = None  # a turn is running on it
        self.cancel_requested = False
        self.at_prompt = False
        self.prompt_interrupted = False
        self.interrupted = False
        self.agent_gone: BaseException | None = None  # the connection closed while nothing was running
        self.unasked = False  # a permission question of this turn could not be asked (no terminal)
        self._scope: anyio.CancelScope | None = None
        self._read_scope: anyio.CancelScope | None = None
        self._tg: TaskGroup | None = None
        self._record: IO[bytes] | None = None

    # -- input ---------------------------------------------------------------------------------------

    @property
    def interactive(self) -> bool:
        """Prompts are typed at a terminal (not piped in)."""
        try:
            return os.isatty(sys.stdin.fileno())
        except (AttributeError, ValueError, OSError):
            return False

    @property
    def reader(self) -> LineReader | EditorReader:
        """The terminal reader, made on first use: prompt_toolkit when installed and stdin and stderr are a
        terminal, else plain lines (with one hint that the ``cli`` extra adds editing)."""
        if self._reader is None:
            if editor_wanted() and editor_available():
                self._reader = EditorReader(
                    state_dir() / "prompt-history", self.all_commands, self.interrupt, self.argument_completions
                )
            else:
                if editor_wanted():
                    self.hint_once("extra", EXTRA_HINT)
                self._reader = LineReader(history_file=history_file(), prompt_out=sys.stderr)
        return self._reader

    def commands(self) -> Iterable[tuple[str, str]]:
        """The agent's slash commands (``available_commands_update``) for completion."""
        conversation = self.conversation
        if conversation is None:
            return []
        return [
            (terminal_safe(command.name), terminal_safe(command.description))
            for command in conversation.state.available_commands
            if isinstance(command, Command)
        ]

    def all_commands(self) -> Iterable[tuple[str, str]]:
        """The agent's slash commands, then the chat's own ``/model`` ``/mode`` ``/set`` when it has options."""
        conversation = self.conversation
        own = list(OWN_COMMANDS) if conversation is not None and conversation.state.config_options else []
        return [*self.commands(), *own]

    def argument_completions(self, text: str) -> Iterable[tuple[str, str, int]]:
        """Values for ``/model`` ``/mode`` ``/set`` from what the agent advertises (cli/session_options.py)."""
        conversation = self.conversation
        return argument_completions(text, conversation.state.config_options) if conversation is not None else []

    async def read_stdin(self) -> str:
        """All of stdin (a pipe, or ``chat -``), as one prompt."""
        data: bytes = await anyio.to_thread.run_sync(sys.stdin.buffer.read, abandon_on_cancel=True)
        return data.decode("utf-8", "replace")

    def hint_first(self, key: str) -> bool:
        """Whether this is the first time ``key`` comes up in this run (a hint is said once)."""
        first = key not in self._hinted
        self._hinted.add(key)
        return first

    def hint_once(self, key: str, text: str) -> None:
        if self.hint_first(key):
            self.renderer.info(text)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        if self._record is not None:
            self._record.close()

    def _transcript(self) -> IO[bytes] | None:
        """``--record FILE``, opened once (cli/record_file.py: a new file or ``--append``, never a link)."""
        path = getattr(self.args, "record", None)
        if self._record is None and path is not None:
            self._record = open_record(path, getattr(self.args, "append", False))
        return self._record

    # -- the agent -----------------------------------------------------------------------------------

    def builder(self) -> ClientBuilder:
        builder = ClientBuilder("acp-session", __version__).on_request_permission(self.on_permission)
        # --approve-all / --approve-reads / --deny-all / --allow / --deny (cli/options.py): answered before asking.
        builder.permission_policy(
            getattr(self.args, "policy", None), on_decision=lambda request, d: show_policy_decision(self, request, d)
        )
        # Protocol version 1 agents call the client for files and commands: only when asked, confined to the
        # session's directory.
        if getattr(self.args, "allow_files", False):
            builder.with_file_system()
        if getattr(self.args, "allow_terminal", False):
            builder.with_terminals()
        builder.on_fallback(request=self._unanswered)
        builder.record_transcript(self._transcript())
        attempts = getattr(self.args, "reconnect", None)
        if attempts is not None:  # --reconnect N (0: off, even for a remote agent)
            builder.reconnect(attempts > 0, attempts=max(attempts, 1))
        return builder

    def _unanswered(self, method: str, params: bytes) -> Any:
        """A call the CLI does not answer (-32601, as without a fallback); for files and commands, say which
        flag would answer it."""
        if method.startswith("fs/") and not getattr(self.args, "allow_files", False):
            self.hint_once(
                "allow-files",
                f"acp-session: the agent asked to use a file ({method}) and was refused; "
                "add --allow-files to let it read and write files in the session's directory",
            )
        elif method.startswith("terminal/") and not getattr(self.args, "allow_terminal", False):
            self.hint_once(
                "allow-terminal",
                f"acp-session: the agent asked to run a command ({method}) and was refused; "
                "add --allow-terminal to let it run commands in the session's directory",
            )
        raise MethodNotFound(data={"method": method})

    def mcp_servers(self, client: ClientConnection) -> list[McpServerConfig]:
        """The ``--mcp-config`` / ``--mcp`` servers the agent takes; each other one is reported, not sent
        (``--json``: one ``mcp_servers`` record with what was sent and what was refused)."""
        protocol = client.protocol
        sent, refused = split_offered(getattr(self.args, "mcp_servers", []), protocol.mcp_transports, protocol.version)
        builtin = client.tools.mcp_transport  # --allow-files / --allow-terminal for a v2 agent
        if self.json and (sent or refused or builtin):
            assert isinstance(self.renderer, JsonRenderer)
            record = {"event": "mcp_servers", "sent": to_builtins(sent), "refused": refused, "builtin": builtin}
            self.renderer.emit(record)
        for item in refused:
            say(f"acp-session: MCP server {item['name']!r} not sent: the agent did not advertise {item['capability']}")
        return sent

    async def run(self, body: Callable[[ClientConnection], Awaitable[int]]) -> int:
        argv = self.args.agent_argv
        code = EXIT_INTERRUPTED
        with anyio.CancelScope() as scope:
            self._scope = scope
            async with anyio.create_task_group() as tg:
                self._tg = tg
                with anyio.open_signal_receiver(signal.SIGINT) as signals:
                    tg.start_soon(self._watch_signals, signals)
                    tg.start_soon(self.status.run)
                    self.status.start(f"starting {_short_command(argv)}\u2026 {{s}} s")
                    limit = getattr(self.args, "init_timeout", DEFAULT_INITIALIZE_TIMEOUT) or None
                    try:
                        # Its own process group: the terminal's Ctrl-C reaches only this CLI, which turns it
                        # into session/cancel instead of killing the agent.
                        async with (
                            connect_remote(self.builder(), self.args, limit)  # --url (cli/remote.py)
                            if getattr(self.args, "url", None)
                            else self.builder().spawn(
                                getattr(self.args, "agent_command", None) or argv,  # registry: cli/agents.py
                                env=profile_environment(self.args),  # a config profile's env (cli/config_file.py)
                                own_process_group=True,
                                initialize_timeout=limit,
                                env_policy=getattr(self.args, "env", "inherit"),
                                pass_env=getattr(self.args, "pass_env", None) or (),
                            )
                        ) as client:
                            self.status.stop()
                            self.client = client
                            tg.start_soon(self._watch_agent, client)
                            code = await body(client)
                    except AuthenticationRequired as exc:
                        self.status.stop()
                        code = self.report_auth(exc, argv)
                    except BrokenPipeError:
                        raise  # stdout's reader went away: main() ends quietly
                    except Exception as exc:  # the agent failed, or could not be run: say so in plain words
                        self.status.stop()
                        if not _reportable(exc):
                            raise
                        url = getattr(self.args, "url", None)
                        remote = describe_remote(exc, url) if url else None
                        self.report(
                            remote or describe(exc, session_id=self._session_id(), stderr_tail=self._stderr_tail())
                        )
                        code = EXIT_ERROR
                    finally:
                        self.status.stop()
                    tg.cancel_scope.cancel()
        if self.interrupted:
            self.renderer.break_line()
            if isinstance(self.renderer, JsonRenderer):
                self.renderer.emit(error_record(Failure("interrupted (Ctrl-C twice)", "Interrupted")))
            print("acp-session: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        return code

    def _session_id(self) -> str | None:
        if self.conversation is not None:
            return self.conversation.session_id
        return getattr(self.args, "session_id", None)

    def _stderr_tail(self) -> tuple[str, ...]:
        client = self.client
        return stderr_tail_of(client.rpc.transport) if client is not None else ()

    def report(self, failure: Failure) -> None:
        """A failure: an ``error`` record with ``--json``, and the plain sentence on stderr."""
        self.renderer.break_line()
        if isinstance(self.renderer, JsonRenderer):
            self.renderer.emit(error_record(failure))
        self.renderer.before_output()
        say("\n".join(failure_lines(failure)))

    def report_auth(self, error: AuthenticationRequired, argv: Sequence[str]) -> int:
        """The agent wants a login: say how in a few lines (``--json``: an ``error`` record)."""
        self.renderer.break_line()
        if isinstance(self.renderer, JsonRenderer):
            self.renderer.emit(auth_record(error))
        named = self.args.agent if getattr(self.args, "agent_command", None) else None  # a registry id
        say(auth_message(error, argv, named))
        return EXIT_AUTH

    async def _watch_agent(self, client: ClientConnection) -> None:
        """The agent died while the loop waits at the prompt: stop waiting and say so at once."""
        error = await client.wait_closed()  # with --reconnect: only once the connection is gone for good
        if self.active is None:
            self.agent_gone = error
            if self._read_scope is not None:
                self._read_scope.cancel()

    # -- Ctrl-C --------------------------------------------------------------------------------------

    async def _watch_signals(self, signals: Any) -> None:
        async for _ in signals:
            self.interrupt()

    def interrupt(self) -> None:
        """Ctrl-C (a signal, or the key at the prompt editor): cancel the active work; at the prompt offer to
        quit; the second one quits."""
        if self.active is not None and not self.cancel_requested:
            self.cancel_requested = True
            self.renderer.info("^C cancelling the active work (Ctrl-C again to quit)")
            assert self._tg is not None
            self._tg.start_soon(self._cancel, self.active)
        elif self.at_prompt and not self.prompt_interrupted:
            self.prompt_interrupted = True
            if not isinstance(self._reader, EditorReader):
                sys.stderr.write("\n")  # after the typed text (and the echoed ^C)
            self.renderer.info("^C (Ctrl-C again or Ctrl-D to quit)")
            self.reader.redraw()
        else:
            self.interrupted = True
            if self._scope is not None:
                self._scope.cancel()

    async def _cancel(self, conversation: Conversation) -> None:
        try:
            await conversation.cancel()
        except Exception as exc:
            self.renderer.info(f"acp-session: the cancel request failed: {describe(exc).message}")

    # -- permission ----------------------------------------------------------------------------------

    async def on_permission(self, request: RequestPermissionRequest) -> str | None:
        return await ask_permission(self, request)  # cli/asking.py

    # -- turns ---------------------------------------------------------------------------------------

    def watch(self, conversation: Conversation) -> None:
        """Point the renderer at this conversation's terminals and context usage."""
        self.conversation = conversation
        state = conversation.state
        if isinstance(self.renderer, TerminalRenderer):
            self.renderer.terminals = state.terminals.get
            self.renderer.client_terminal = lambda terminal_id: _runs_terminal(conversation, terminal_id)
        elif isinstance(self.renderer, JsonRenderer):
            self.renderer.context = lambda: state.usage

    def announce(self, conversation: Conversation) -> None:
        """``--json``: a ``session`` record first, so a script can continue the session later."""
        if isinstance(self.renderer, JsonRenderer):
            self.renderer.emit({"event": "session", "session_id": conversation.session_id, "cwd": self.args.cwd})

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
        session = client.agent.capabilities.session
        caps = session.prompt if isinstance(session, SessionCapabilities) else None
        blocks: list[ContentBlock] = [TextContent(text=text)]
        for path in paths:
            block, how = attachment(path, caps if isinstance(caps, PromptCapabilities) else None)
            blocks.append(block)
            self.renderer.info(f"attached {path} {_ATTACHED_AS[how]}")
        return blocks

    async def turn(self, conversation: Conversation, prompt: str) -> int:
        self.cancel_requested = False
        self.unasked = False
        self.active = conversation
        self.watch(conversation)
        self.recent.remember(conversation.session_id or "", self.args.agent_key, self.args.cwd, prompt)
        code = EXIT_ERROR
        usage = conversation.state.usage
        seen: list[Any] = []
        if usage is not None:  # reported before this turn: shown only when it changes
            seen.append(
                (usage.used, usage.size, None if usage.cost is None else (usage.cost.amount, usage.cost.currency))
            )
        self.status.start(WORKING)
        timer = anyio.CancelScope()
        seconds = getattr(self.args, "timeout", None)
        if seconds is not None and self._tg is not None:  # --timeout: cli/daily.py

            async def timed() -> None:
                with timer:
                    await turn_timer(self, conversation, seconds)

            self._tg.start_soon(timed)
        try:
            turn = conversation.chat(self.prompt_blocks(conversation.connection, prompt))
            with typing_hidden():  # typed ahead: kept for the next prompt, never echoed into the reply
                async for event in turn:
                    if isinstance(event, (ChatDone, ChatError)):  # (the events carry no usage: shown at the end)
                        self.status.stop()
                        self._usage_changed(conversation, seen)
                    self.renderer.event(event)
                    if isinstance(event, ChatDone):
                        code = exit_code(event.response.stop_reason)
                    elif isinstance(event, ChatError):
                        code = EXIT_ERROR
                        if isinstance(event.error, AuthenticationRequired):
                            named = self.args.agent if getattr(self.args, "agent_command", None) else None
                            say(auth_message(event.error, self.args.agent_argv, named))
                            code = EXIT_AUTH
        finally:
            timer.cancel()
            self.status.stop()
            self.active = None
        return EXIT_UNASKED if code == EXIT_OK and self.unasked else code

    def _prompt(self) -> str:
        """``> `` (bold on a colour terminal) where someone types."""
        return "\x1b[1m> \x1b[0m" if not self.json and color_enabled(sys.stderr) else "> "

    def continue_command(self) -> str:
        """How to continue this chat later (cli/recap.py)."""
        return continue_command(self.args)

    async def loop(
        self,
        conversation: Conversation,
        prompt: str | None,
        *,
        from_stdin: bool = False,
        announce: bool = True,
        replayed: bool = False,
    ) -> int:
        """One turn with ``prompt``; without one, all of stdin as one turn when it is piped (or ``from_stdin``:
        ``chat -``), else prompts read at the terminal until ``/exit``, Ctrl-D or the agent's end. ``replayed``:
        the history was shown (``resume``), which is all there is to do when stdin is piped and empty."""
        self.watch(conversation)
        if announce:
            self.announce(conversation)
        if prompt is None and (from_stdin or not self.interactive):
            prompt = (await self.read_stdin()).rstrip("\r\n")
            if not prompt.strip() and replayed and not from_stdin:
                if isinstance(self.renderer, JsonRenderer):
                    self.renderer.emit({"event": "done"})
                again = shlex.join(["acp-session", "resume", conversation.session_id or "ID", "PROMPT"])
                self.renderer.info(
                    f"acp-session: nothing to send (stdin is not a terminal and was empty); continue: {again}"
                )
                return EXIT_OK
            if not prompt.strip():
                self.report(Failure("stdin was empty: there is no prompt to send", "EmptyPrompt"))
                return EXIT_ERROR
        if prompt is not None:
            code = await self.turn(conversation, prompt)
            if not self.json:
                self.renderer.break_line()
                self.renderer.info(f"session {conversation.session_id} (continue: {self.continue_command()})")
            return code
        editor = isinstance(self.reader, EditorReader)
        if not self.json:
            keys = "Enter sends, Alt-Enter adds a line, Tab completes /commands; " if editor else ""
            self.renderer.info(f"session {conversation.session_id}: {keys}Ctrl-C cancels, /exit or Ctrl-D leaves")
        code = EXIT_OK
        while True:
            if self.agent_gone is not None:
                return self._agent_gone()
            self.at_prompt = True
            self.renderer.break_line()
            line: str | None = None
            with anyio.CancelScope() as self._read_scope:
                line = await self.reader.readline(self._prompt())
            self._read_scope = None
            self.at_prompt = False
            self.prompt_interrupted = False
            if self.agent_gone is not None:
                return self._agent_gone()
            if line is None:
                return code
            text = line.strip()
            if text in LEAVE_WORDS:
                return code
            if await run_own_command(self, conversation, text):  # /model /mode /set: cli/daily.py
                continue
            if text:
                code = await self.turn(conversation, line if "\n" in text else text)
                client = conversation.connection
                if client.rpc.closed:  # the turn's error said what happened; how to come back, as at the prompt
                    self.renderer.info(f"acp-session: start it again and continue with: {self.continue_command()}")
                    return EXIT_ERROR

    def _agent_gone(self) -> int:
        assert self.agent_gone is not None
        if isinstance(self._reader, LineReader) and self._reader.editing:
            sys.stdout.write("\n")
        failure = describe(self.agent_gone, stderr_tail=self._stderr_tail())
        self.report(failure)
        self.renderer.info(f"acp-session: start it again and continue with: {self.continue_command()}")
        return EXIT_ERROR


def _reportable(exc: BaseException) -> bool:
    """Failures of the agent or of running it (not a bug of this CLI, which main() reports)."""
    return isinstance(exc, (AcpError, OSError, UnicodeError))


def _runs_terminal(conversation: Conversation, terminal_id: str) -> bool:
    """Whether ``terminal_id`` may be one the client ran for the agent (protocol v1's ``terminal/create``, with
    ``--allow-terminal``): such a terminal is never said to be unavailable, even once the agent released it."""
    try:
        connection = conversation.session.connection
    except AcpError:  # not attached to a session (any more)
        return False
    provider = connection.tools.terminals
    return provider is not None and (
        connection.protocol.version == 1 or terminal_id in getattr(provider, "terminal_ids", ())
    )
