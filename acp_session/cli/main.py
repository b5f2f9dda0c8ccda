"""``acp-session``: chat with an ACP agent (v1 or v2), list and resume its sessions, check conformance.

Subcommands: ``chat [PROMPT]``, ``sessions``, ``resume ID [PROMPT]``, ``login``, ``conformance ...``. The default
agent is the bundled reference agent (``python -m acp_conformance.agent``) keeping its sessions in a file under the
user's state directory, so ``acp-session chat "hello"`` works out of the box and ``sessions`` / ``resume`` find
earlier chats. The parts: ``parser`` (arguments), ``app`` (one run), ``commands`` (the subcommands), ``render``
(output), ``prompts`` (terminal input), ``exits`` (exit codes).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Sequence

import anyio

from .exits import EXIT_CODES, EXIT_ERROR, exit_code

__all__ = ["EXIT_CODES", "default_agent", "exit_code", "main"]


def default_agent() -> list[str]:
    """The agent ``acp-session`` runs without ``--agent``: the bundled reference agent (``cli/parser.py``)."""
    from .parser import default_agent

    return default_agent()


def main(argv: Sequence[str] | None = None) -> None:
    args_list = list(sys.argv[1:] if argv is None else argv)
    # Each subcommand imports what its path needs: ``conformance``, ``agents``, ``view``, ``config``, ``serve`` and
    # ``compare`` never load the chat (the client, the conversation layer, the renderers).
    if args_list and args_list[0] == "agents":  # cli/agents.py
        from .agents import main as agents_main

        sys.exit(agents_main(args_list[1:]))
    if args_list and args_list[0] == "view":  # cli/view.py
        from .view import main as view_main

        sys.exit(view_main(args_list[1:]))
    if args_list and args_list[0] == "config":  # cli/config_file.py
        from .config_file import main as config_main

        sys.exit(config_main(args_list[1:]))
    if args_list and args_list[0] == "serve":  # cli/serve.py (the host; imported only when used)
        from .serve import main as serve_main

        sys.exit(serve_main(args_list[1:]))
    if args_list and args_list[0] == "compare":  # cli/compare.py (imported only when used)
        from .compare import main as compare_main

        sys.exit(compare_main(args_list[1:]))
    if args_list and args_list[0] == "conformance":
        from acp_conformance.runner.__main__ import main as conformance_main

        from .parser import conformance_agent

        conformance_main(args_list[1:], prog="acp-session conformance", default_agent=conformance_agent())
        return
    from .parser import parse

    args = parse(args_list)  # usage errors and --help end here, before the chat's modules load
    from . import commands
    from .app import ChatApp

    app = ChatApp(args)
    command = {
        "chat": commands.chat,
        "sessions": commands.sessions,
        "resume": commands.resume,
        "login": commands.login,
    }[args.command]
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
        from .messages import describe, error_record
        from .screen import say

        failure = describe(leaf)
        if args.json:
            print(json.dumps(error_record(failure)), flush=True)
        say(f"acp-session: {failure.message} (ACP_SESSION_DEBUG=1 shows the traceback)")
        code = EXIT_ERROR
    finally:
        app.close()
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
