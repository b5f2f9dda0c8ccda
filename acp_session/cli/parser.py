"""The ``acp-session`` command line's arguments: the parser, its checks, and the default agent."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import NoReturn

from acp_session import __version__
from acp_session.protocol.negotiate import DEFAULT_INITIALIZE_TIMEOUT

from ..mcp.config import McpConfigError, mcp_servers_from
from ..registry import RegistryError, UnknownAgent
from .agents import add_registry_options, agent_from_args
from .attach import check_attachment
from .config_file import apply_config_file
from .exits import EXIT_ERROR, EXIT_HELP, EXIT_HELP_OTHER, EXIT_USAGE
from .login import DEFAULT_LOGIN_TIMEOUT
from .options import add_daily_options, add_format_option, finish_daily_options
from .record_file import check_record
from .remote import add_remote_options, check_remote_args

__all__ = ["conformance_agent", "default_agent", "default_store", "history_file", "parse"]


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
    return [sys.executable, "-m", "acp_conformance.agent", "--store", str(default_store())]


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
        raise _Failure(f"agent command not found: {argv[0]} (check --agent, or install the agent)")
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


class _UsageError(Exception):
    pass


class _Failure(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse with every error in one line (``acp-session chat: error: ...; see acp-session chat --help``),
    exit code 2."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("the following arguments are required: ID"):
            message = "the session ID is required (`acp-session sessions` lists them)"
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

    def common(p: argparse.ArgumentParser, *, chatty: bool = True, cwd: bool = True) -> None:
        """The options of every command that starts an agent; ``chatty``: those of a command that runs turns
        (chat, resume), ``cwd``: one that works in a directory (not login)."""
        p.add_argument(
            "--agent",
            metavar="ID|COMMAND",
            default=None,
            help="an ACP registry agent id or alias (codex, claude, gemini, opencode, copilot; `acp-session agents` "
            'lists them) or the agent command line, e.g. "acp-reference-agent" (default: the bundled reference '
            f"agent, sessions kept in {default_store()})",
        )
        add_registry_options(p)  # --registry, --preview (cli/agents.py)
        add_remote_options(p)  # --url, --header, --insecure, --ca-file (cli/remote.py)
        if cwd:
            p.add_argument("--cwd", metavar="DIR", default=None, help="the session's working directory (default: .)")
        p.add_argument("--json", action="store_true", help="print one JSON object per line instead of text")
        add_format_option(p, turns=chatty)  # --format text|json|quiet (cli/options.py)
        p.add_argument(
            "--init-timeout",
            metavar="SECONDS",
            type=_seconds,
            default=DEFAULT_INITIALIZE_TIMEOUT,
            help="how long the agent may take to start and answer initialize "
            f"(default: {DEFAULT_INITIALIZE_TIMEOUT:g}; 0: no limit)",
        )
        if chatty:
            p.add_argument(
                "--reconnect",
                metavar="ATTEMPTS",
                type=int,
                default=None,
                help="when the connection to the agent is lost, re-establish it (restarting an agent started here) "
                "up to ATTEMPTS times and resume the session; a turn in flight goes on (default: off for an agent "
                "started here; 0: off)",
            )
        p.add_argument(
            "--env",
            choices=("inherit", "minimal"),
            default="inherit",
            help="the agent's environment: all of yours (inherit, the default) or only PATH, HOME, user, locale, "
            "terminal and temp dir (minimal) plus --pass-env names",
        )
        p.add_argument(
            "--record",
            metavar="FILE",
            default=None,
            help="write every wire message, both directions and timestamped, to FILE, a new file (a transcript; "
            "`acp-session view FILE` shows it as a web page); never through a symbolic link",
        )
        p.add_argument(
            "--append",
            action="store_true",
            help="with --record: add to FILE when it exists (else an existing FILE is refused)",
        )
        p.add_argument(
            "--pass-env",
            metavar="NAME",
            action="append",
            default=None,
            help="with --env minimal: also pass this variable (e.g. an API key); repeatable",
        )
        if chatty:
            p.add_argument(
                "--approve-all",
                "--yes",
                "-y",
                dest="yes",
                action="store_true",
                help="approve every permission request (allow once); --yes is the old name",
            )
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
        description="Send PROMPT and stream the turn. Without PROMPT: piped stdin is read whole as one prompt, "
        "and at a terminal prompts are typed one after another (Enter sends, Alt-Enter starts a new line, a "
        "paste stays one prompt; /exit or Ctrl-D leaves). The reply is rendered as Markdown on a terminal; "
        "thoughts are dimmed, tool calls show their status and output, plans and notices appear as they "
        "arrive; permission questions are asked at the terminal. Ctrl-C cancels the active work; a second "
        "Ctrl-C exits.",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    chat.add_argument(
        "prompt", nargs="*", metavar="PROMPT", help="the prompt (several words are joined; - reads it from stdin)"
    )
    chat.add_argument(
        "-c",
        "--continue",
        dest="continue_",
        action="store_true",
        help="continue the latest session of this agent in this directory (--cwd) instead of starting one",
    )
    common(chat)
    add_daily_options(chat, command="chat")  # --model, --mode, --set, policies, --timeout, ... (cli/options.py)

    sessions = sub.add_parser(
        "sessions",
        help="list the agent's sessions in --cwd (default: .), or all of them with --all",
        description="List the agent's sessions (session/list): id, last update (local time), directory and "
        "title (the first prompt when the agent gives no title and this CLI started the session).",
        epilog=EXIT_HELP_OTHER,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sessions.add_argument("--all", action="store_true", help="every session of the agent, whatever its directory")
    sessions.add_argument(
        "action",
        nargs="?",
        choices=("show", "history"),
        help="show ID|NAME: one session's metadata; history ID|NAME: its conversation (rendered, or --json)",
    )
    sessions.add_argument("target", nargs="?", metavar="ID|NAME", help="the session (its id, or a --session name)")
    common(sessions, chatty=False)

    resume = sub.add_parser(
        "resume",
        help="resume a session: replay its history, then continue (one turn with PROMPT, else interactive)",
        description="Resume session ID (session/resume): replay its history, then continue like chat: one turn "
        "with PROMPT, else prompts from stdin or the terminal. `acp-session chat -c` continues the latest one.",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    resume.add_argument("session_id", metavar="ID", help="the session's id (see acp-session sessions)")
    resume.add_argument(
        "prompt", nargs="*", metavar="PROMPT", help="a prompt for one turn (several words are joined; - reads stdin)"
    )
    common(resume)
    add_daily_options(resume, command="resume")

    login = sub.add_parser(
        "login",
        help="log in to the agent: run one of its login methods (over ACP, or its own terminal login)",
        description="Run one of the agent's login methods: a protocol login over ACP (authenticate), or the "
        "agent's own login command in this terminal. Without METHOD the only one is used, or they are listed.",
        epilog=EXIT_HELP_OTHER,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    login.add_argument("method", nargs="?", metavar="METHOD", help="the login method's id (default: the only one)")
    login.add_argument(
        "--login-timeout",
        metavar="SECONDS",
        type=_seconds,
        default=DEFAULT_LOGIN_TIMEOUT,
        help="how long the agent may take to finish a login over ACP, e.g. one done in a browser "
        f"(default: {DEFAULT_LOGIN_TIMEOUT:g}; 0: no limit)",
    )
    common(login, chatty=False, cwd=False)

    sub.add_parser(  # acp-session agents ...: cli/agents.py (see its --help)
        "agents",
        help="the ACP registry's agents: list (--json), info ID, install ID; start one with --agent ID",
        add_help=False,
    )
    sub.add_parser(  # acp-session view ...: cli/view.py (see its --help)
        "view",
        help="a recorded transcript (chat --record FILE) as one self-contained web page",
        add_help=False,
    )
    sub.add_parser(  # cli/config_file.py
        "config",
        help="the config file: `acp-session config show` prints the merged settings and their sources",
        add_help=False,
    )
    sub.add_parser(  # cli/compare.py
        "compare",
        help="the same prompt to several agents at once, each in its own copy of the directory; a side-by-side summary",
        add_help=False,
    )
    sub.add_parser(
        "conformance",
        help="check an agent against the protocol's rules (see acp-session conformance --help); default agent: "
        "the reference agent",
        add_help=False,
    )
    return parser, {"chat": chat, "sessions": sessions, "resume": resume, "login": login}


def conformance_agent() -> str:
    """``acp-session conformance`` checks the bundled reference agent unless ``--agent`` names another."""
    return shlex.join([sys.executable, "-m", "acp_conformance.agent"])


def parse(argv: list[str]) -> argparse.Namespace:
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
    if getattr(args, "prompt", None) and not " ".join(args.prompt).strip():
        command.error("the prompt is empty (without PROMPT, prompts are read line by line)")
    try:
        args.mcp_servers = mcp_servers_from(getattr(args, "mcp_config", []), getattr(args, "mcp", []))
    except McpConfigError as exc:
        command.error(str(exc))
    problem = check_record(getattr(args, "record", None), getattr(args, "append", False))
    if problem is not None:
        command.error(problem)
    for path in getattr(args, "attach", []):
        problem = check_attachment(path)
        if problem is not None:
            command.error(problem)
    if args.command == "sessions" and args.all and args.cwd is not None:
        command.error("--all and --cwd do not go together")
    if args.command == "sessions" and (args.action is None) != (args.target is None):
        command.error(
            "sessions show and sessions history take one session ID or NAME"
            if args.action
            else f"unknown sessions action {args.target!r} (show or history)"
        )
    if not hasattr(args, "cwd"):
        args.cwd = None  # login: the agent's directory is this one
    if args.cwd is not None and not _is_utf8(args.cwd):
        command.error("--cwd is not valid UTF-8 (ACP sends paths as JSON text); use a directory with a UTF-8 name")
    if getattr(args, "prompt", None) and not all(_is_utf8(word) for word in args.prompt):
        args.prompt = [word.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for word in args.prompt]
        print("acp-session: the prompt had bytes that are not UTF-8; they were replaced by \ufffd", file=sys.stderr)
    if getattr(args, "pass_env", None) and args.env != "minimal":
        print(
            "acp-session: --pass-env does nothing without --env minimal (the agent already gets all of "
            "your environment)",
            file=sys.stderr,
        )
    args.cwd_given = os.path.abspath(args.cwd) if args.cwd is not None else None
    args.cwd = args.cwd_given or os.getcwd()
    if not hasattr(args, "yes"):
        args.yes = False
    if not os.path.isdir(args.cwd):
        command.error(f"--cwd is not a directory: {args.cwd}")
    if not hasattr(args, "continue_"):
        args.continue_ = False
    apply_config_file(args, command, argv)  # defaults and agent profiles from config.toml (cli/config_file.py)
    finish_daily_options(args, command)
    problem = check_remote_args(args)  # --url: a remote agent, nothing to start (cli/remote.py)
    if problem is not None:
        command.error(problem)
    if args.url is not None:
        return args
    try:
        args.agent_command = agent_from_args(args)  # --agent ID: an ACP registry agent (cli/agents.py)
        args.agent_argv = args.agent_command.argv if args.agent_command else _agent_argv(args.agent)
    except _UsageError as exc:
        command.error(str(exc))
    except (_Failure, RegistryError) as exc:
        if args.json:
            # An --agent word that is neither a program nor a registry id is "not found" either way.
            found = isinstance(exc, RegistryError) and not isinstance(exc, UnknownAgent)
            kind = type(exc).__name__ if found else "AgentNotFound"
            record = {"event": "error", "error": str(exc), "error_type": kind}
            print(json.dumps(record), flush=True)
        print(f"acp-session: {exc}", file=sys.stderr)
        sys.exit(EXIT_ERROR)
    args.agent_key = args.agent if args.agent is not None else "(the bundled reference agent)"
    return args


def _is_utf8(text: str) -> bool:
    """Command-line text that had bytes that are not UTF-8 holds surrogates (Python's surrogateescape)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
