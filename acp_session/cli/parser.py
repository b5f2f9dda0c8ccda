"""The ``acp-session`` command line's arguments: the parser, its checks, and the default agent."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import NoReturn

from acp_session import __version__
from acp_session.protocol.negotiate import DEFAULT_INITIALIZE_TIMEOUT

from .attach import check_attachment
from .exits import EXIT_ERROR, EXIT_HELP, EXIT_USAGE

__all__ = ["conformance_args", "default_agent", "default_store", "history_file", "parse"]


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


class _UsageError(Exception):
    pass


class _Failure(Exception):
    pass


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
                help="let a protocol version 1 agent read and write files inside the session's directory",
            )
            p.add_argument(
                "--allow-terminal",
                action="store_true",
                help="let a protocol version 1 agent run commands in the session's directory (minimal environment)",
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


def conformance_args(args: list[str]) -> list[str]:
    """``acp-session conformance`` checks the bundled reference agent unless ``--agent`` names another."""
    if any(a in ("-h", "--help") or a == "--agent" or a.startswith("--agent=") for a in args):
        return args
    return ["--agent", shlex.join([sys.executable, "-m", "conformance.agent"]), *args]


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
    if args.command == "resume" and args.session_id is None:
        command.error("the session ID is required (`acp-session sessions` lists them)")
    if getattr(args, "prompt", None) and not " ".join(args.prompt).strip():
        command.error("the prompt is empty (without PROMPT, prompts are read line by line)")
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
