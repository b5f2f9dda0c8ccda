"""``acp-session``: chat with an ACP agent (v1 or v2), list and resume its sessions, check conformance.

Subcommands: ``chat [PROMPT]``, ``sessions``, ``resume ID [PROMPT]``, ``conformance ...``. The default agent is
the bundled reference agent (``python -m conformance.agent``) keeping its sessions in a file under the user's
state directory, so ``acp-session chat "hello"`` works out of the box and ``sessions`` / ``resume`` find
earlier chats.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

import anyio
from anyio.abc import TaskGroup

from acp_session import __version__
from acp_session.client import ClientBuilder, ClientConnection
from acp_session.codec import to_builtins
from acp_session.conversation import ChatDone, ChatError, Conversation
from acp_session.errors import AcpError, ConnectionClosed, InitializeTimeout
from acp_session.mcp.config import McpConfigError, mcp_servers_from, split_offered
from acp_session.mcp.servers import McpServerConfig
from acp_session.protocol.negotiate import DEFAULT_INITIALIZE_TIMEOUT
from acp_session.schema import (
    ContentBlock,
    PromptCapabilities,
    RequestPermissionRequest,
    SessionCapabilities,
    TextContent,
)

from ..auth import AuthenticationRequired
from .attach import attachment, check_attachment
from .login import EXIT_AUTH, auth_message, auth_record, pick_method
from .prompts import LineReader, choose_option, permission_question
from .render import JsonRenderer, Renderer, TerminalRenderer, color_enabled

__all__ = ["EXIT_CODES", "default_agent", "exit_code", "main"]

# Exit codes: the stop reason of the (last) turn, or what went wrong.
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_CODES: dict[str, int] = {
    "end_turn": 0,
    "error": 1,
    "cancelled": 3,
    "refusal": 4,
    "max_tokens": 5,
    "max_turn_requests": 6,
}
EXIT_OTHER = 7  # a stop reason this CLI does not know

EXIT_HELP = """\
exit codes:
  0    the turn ended with end_turn (interactive: the last turn did; no turn at all is 0 too)
  1    error: the turn ended with stop reason error, the prompt failed, or the agent could not be run
  2    usage error
  3    cancelled (Ctrl-C once cancels the active work)
  4    refusal
  5    max_tokens
  6    max_turn_requests
  7    any other stop reason
  8    the agent needs a login first (the message says how; see `acp-session login`)
  130  interrupted (Ctrl-C twice)
"""


def exit_code(stop_reason: str | None) -> int:
    if stop_reason is None:
        return EXIT_ERROR
    return EXIT_CODES.get(stop_reason, EXIT_OTHER)


def default_store() -> Path:
    """Where the default (reference) agent keeps its sessions."""
    explicit = os.environ.get("ACP_REFERENCE_AGENT_STORE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "acp-session" / "reference-agent-sessions.json"


def history_file() -> Path:
    """Where the interactive loop keeps the lines typed at its prompt (readline history)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "acp-session" / "history"


def default_agent() -> list[str]:
    return [sys.executable, "-m", "conformance.agent", "--store", str(default_store())]


def _agent_argv(command: str | None) -> list[str]:
    """The agent's argv from ``--agent`` (split like a shell command line), checked before anything starts."""
    if command is None:
        argv = default_agent()
    else:
        try:
            argv = shlex.split(command)
        except ValueError as exc:  # "No closing quotation", "No escaped character"
            raise _UsageError(f"--agent {command!r}: {str(exc).lower()}") from None
    if not argv:
        raise _UsageError("--agent is empty")
    if shutil.which(argv[0]) is None:
        raise _Failure(f"agent command not found: {argv[0]}")
    return argv


def _seconds(text: str) -> float:
    """``--init-timeout``'s value: seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 (no limit) or a positive number of seconds: {text!r}")
    return value


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


class _UsageError(Exception):
    pass


class _Failure(Exception):
    pass


# ---------------------------------------------------------------------------------------------- the chat app


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

    def mcp_servers(self, client: ClientConnection) -> list[McpServerConfig]:
        """The ``--mcp-config`` / ``--mcp`` servers the agent takes; each other one is reported, not sent
        (``--json``: one ``mcp_servers`` record with what was sent and what was refused)."""
        protocol = client.protocol
        sent, refused = split_offered(self.args.mcp_servers, protocol.mcp_transports, protocol.version)
        builtin = client.tools_over_mcp_transport  # --allow-files / --allow-terminal for a v2 agent
        if self.json and (sent or refused or builtin):
            assert isinstance(self.renderer, JsonRenderer)
            record = {"event": "mcp_servers", "sent": to_builtins(sent), "refused": refused, "builtin": builtin}
            self.renderer.emit(record)
        for item in refused:
            print(
                f"acp-session: MCP server {item['name']!r} not sent: the agent did not advertise {item['capability']}",
                file=sys.stderr,
            )
        return sent

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


# ---------------------------------------------------------------------------------------------- commands


def _prompt_text(words: Sequence[str]) -> str | None:
    text = " ".join(words)
    return text if words else None


async def _chat(app: ChatApp) -> int:
    args = app.args

    async def body(client: ClientConnection) -> int:
        conversation = await client.start_conversation(args.cwd, mcp_servers=app.mcp_servers(client))
        return await app.loop(conversation, _prompt_text(args.prompt))

    return await app.run(body)


async def _resume(app: ChatApp) -> int:
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
        conversation = await Conversation.resume(client, args.session_id, cwd, mcp_servers=app.mcp_servers(client))
        app.renderer.history(conversation.history())
        return await app.loop(conversation, _prompt_text(args.prompt))

    return await app.run(body)


async def _login(app: ChatApp) -> int:
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


async def _sessions(app: ChatApp) -> int:
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


# ---------------------------------------------------------------------------------------------- arguments


class _Parser(argparse.ArgumentParser):
    """argparse with every error in one line (``acp-session chat: error: ...; see acp-session chat --help``),
    exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}; see {self.prog} --help\n")


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = _Parser(
        prog="acp-session",
        description="Chat with an ACP agent (protocol version 1 or 2) at the terminal "
        "(default agent: the bundled reference agent).",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"acp-session {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def common(p: argparse.ArgumentParser, *, chatty: bool = True) -> None:
        p.add_argument(
            "--agent",
            metavar="COMMAND",
            default=None,
            help='the agent command line, e.g. "acp-reference-agent" (default: the bundled reference agent, '
            f"sessions kept in {default_store()})",
        )
        p.add_argument("--cwd", metavar="DIR", default=None, help="the session's working directory (default: .)")
        p.add_argument("--json", action="store_true", help="print one JSON object per line instead of text")
        p.add_argument(
            "--init-timeout",
            metavar="SECONDS",
            type=_seconds,
            default=DEFAULT_INITIALIZE_TIMEOUT,
            help="how long the agent may take to start and answer initialize "
            f"(default: {DEFAULT_INITIALIZE_TIMEOUT:g}; 0: no limit)",
        )
        p.add_argument(
            "--env",
            choices=("inherit", "minimal"),
            default="inherit",
            help="the agent's environment: all of yours (inherit, the default) or only PATH, HOME, user, locale, "
            "terminal and temp dir (minimal) plus --pass-env names",
        )
        p.add_argument(
            "--pass-env",
            metavar="NAME",
            action="append",
            default=None,
            help="with --env minimal: also pass this variable (e.g. an API key); repeatable",
        )
        if chatty:
            p.add_argument("--yes", "-y", action="store_true", help="approve every permission request (allow once)")
            p.add_argument(
                "--allow-files",
                action="store_true",
                help="let the agent read and write files inside the session's directory (a v2 agent: as MCP tools)",
            )
            p.add_argument(
                "--allow-terminal",
                action="store_true",
                help="let the agent run commands in the session's directory, minimal environment (v2: as MCP tools)",
            )
            p.add_argument(
                "--mcp-config",
                metavar="FILE",
                action="append",
                default=[],
                help='MCP servers for the session from a .mcp.json-style file ({"mcpServers": {NAME: {command, args, '
                'env} | {type: "http", url, headers}}}); repeatable',
            )
            p.add_argument(
                "--mcp",
                metavar="NAME=COMMAND",
                action="append",
                default=[],
                help='one stdio MCP server, e.g. --mcp "fs=npx -y some-server /tmp" (found on PATH); repeatable',
            )
            p.add_argument(
                "--attach",
                metavar="PATH",
                action="append",
                default=[],
                help="send a file with the (first) prompt: an image or audio when the agent takes them, else embedded, "
                "else a link (repeatable)",
            )

    chat = sub.add_parser(
        "chat",
        help="chat: one turn with PROMPT, an interactive prompt loop without one",
        description="Send PROMPT and stream the turn, or without PROMPT read prompts line by line. Thoughts are "
        "dimmed, tool calls show their status, plans and notices appear as they arrive; permission questions "
        "are asked at the terminal. Ctrl-C cancels the active work; a second Ctrl-C exits.",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    chat.add_argument("prompt", nargs="*", metavar="PROMPT", help="the prompt (several words are joined)")
    common(chat)

    sessions = sub.add_parser(
        "sessions",
        help="list the agent's sessions in --cwd (default: .), or all of them with --all",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sessions.add_argument("--all", action="store_true", help="every session of the agent, whatever its directory")
    common(sessions, chatty=False)

    resume = sub.add_parser(
        "resume",
        help="resume a session: replay its history, then continue (one turn with PROMPT, else interactive)",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    resume.add_argument("session_id", nargs="?", metavar="ID", help="the session's id (see acp-session sessions)")
    resume.add_argument("prompt", nargs="*", metavar="PROMPT", help="a prompt for one turn (several words are joined)")
    common(resume)

    login = sub.add_parser(
        "login",
        help="log in to the agent: run one of its login methods (over ACP, or its own terminal login)",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    login.add_argument("method", nargs="?", metavar="METHOD", help="the login method's id (default: the only one)")
    common(login, chatty=False)

    sub.add_parser(
        "conformance",
        help="check an agent: the same as acp-conformance (see its --help); default agent: the reference agent",
        add_help=False,
    )
    return parser, {"chat": chat, "sessions": sessions, "resume": resume, "login": login}


def _conformance_args(args: list[str]) -> list[str]:
    """``acp-session conformance`` checks the bundled reference agent unless ``--agent`` names another."""
    if any(a in ("-h", "--help") or a == "--agent" or a.startswith("--agent=") for a in args):
        return args
    return ["--agent", shlex.join([sys.executable, "-m", "conformance.agent"]), *args]


def _parse(argv: list[str]) -> argparse.Namespace:
    """Parse the command line, options anywhere (``resume ID --json PROMPT`` as ``chat PROMPT --json``); usage
    errors exit here with code 2."""
    parser, commands = _parser()
    args, extra = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        sys.exit(EXIT_USAGE)
    command = commands[args.command]
    if extra:
        options = [word for word in extra if word.startswith("-") and word != "-"]
        if options or not hasattr(args, "prompt"):
            command.error(f"unrecognized arguments: {' '.join(options or extra)}")
        args.prompt = [*args.prompt, *extra]
    if args.command == "resume" and args.session_id is None:
        command.error("the session ID is required (`acp-session sessions` lists them)")
    if getattr(args, "prompt", None) and not " ".join(args.prompt).strip():
        command.error("the prompt is empty (without PROMPT, prompts are read line by line)")
    try:
        args.mcp_servers = mcp_servers_from(getattr(args, "mcp_config", []), getattr(args, "mcp", []))
    except McpConfigError as exc:
        command.error(str(exc))
    for path in getattr(args, "attach", []):
        problem = check_attachment(path)
        if problem is not None:
            command.error(problem)
    if args.command == "sessions" and args.all and args.cwd is not None:
        command.error("--all and --cwd do not go together")
    args.cwd_given = os.path.abspath(args.cwd) if args.cwd is not None else None
    args.cwd = args.cwd_given or os.getcwd()
    if not hasattr(args, "yes"):
        args.yes = False
    if not os.path.isdir(args.cwd):
        command.error(f"--cwd is not a directory: {args.cwd}")
    try:
        args.agent_argv = _agent_argv(args.agent)
    except _UsageError as exc:
        command.error(str(exc))
    except _Failure as exc:
        print(f"acp-session: {exc}", file=sys.stderr)
        sys.exit(EXIT_ERROR)
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] == "conformance":
        from conformance.runner.__main__ import main as conformance_main

        conformance_main(_conformance_args(args_list[1:]))
        return
    args = _parse(args_list)
    app = ChatApp(args)
    command = {"chat": _chat, "sessions": _sessions, "resume": _resume, "login": _login}[args.command]
    try:
        code = anyio.run(command, app)
    except Exception as exc:  # a bug or an unforeseen failure: one line, not a traceback (ACP_SESSION_DEBUG=1 shows it)
        if os.environ.get("ACP_SESSION_DEBUG"):
            raise
        leaf = _single(exc)
        if any(
            isinstance(e, BrokenPipeError) for e in _leaves(exc)
        ):  # stdout's reader went away (``| head``): nothing left to say
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(EXIT_ERROR)
        print(f"acp-session: {type(leaf).__name__}: {leaf} (ACP_SESSION_DEBUG=1 shows the traceback)", file=sys.stderr)
        code = EXIT_ERROR
    finally:
        app.reader.close()
    sys.exit(code)


def _leaves(exc: BaseException) -> list[BaseException]:
    """Every exception inside (nested) exception groups; ``[exc]`` for a plain one."""
    members = getattr(exc, "exceptions", None)
    if not isinstance(members, tuple):
        return [exc]
    return [leaf for member in members for leaf in _leaves(member)]


def _single(exc: BaseException) -> BaseException:
    """The one exception inside (nested) exception groups of one member each, else ``exc``."""
    while isinstance(getattr(exc, "exceptions", None), tuple) and len(exc.exceptions) == 1:  # type: ignore[attr-defined]
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc
