"""The daily-use flags of ``chat`` and ``resume`` (issue 38): session options, permission policy, turn timeout,
output format, named sessions; added to the parser here and checked once it has parsed.

``--model`` / ``--mode`` / ``--set`` / ``--system-prompt`` are only checked for form here: what the agent offers
is known once the session is open (``session_options``).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from acp_session.client import PermissionPolicy, PermissionRule

__all__ = ["add_daily_options", "add_format_option", "finish_daily_options", "policy_from"]

FORMATS = ("text", "json", "quiet")


def _turn_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


class _Rule(argparse.Action):
    """``--allow`` / ``--deny``: one list of (action, text) in command-line order, since the first match wins."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, "policy_rules", nargs=None, default=[], **kwargs)

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: Any = None) -> None:
        namespace.policy_rules = [*getattr(namespace, "policy_rules", []), (self.const, values)]


def add_format_option(parser: argparse.ArgumentParser, *, turns: bool = True) -> None:
    """``--format``; ``quiet`` (only a turn's final reply) only for the commands that run turns."""
    parser.add_argument(
        "--format",
        choices=FORMATS if turns else FORMATS[:2],
        default=None,
        help="text (the default), json (one JSON object per line: the same as --json)"
        + (" or quiet (only the final reply on stdout, for scripts)" if turns else ""),
    )


def add_daily_options(parser: argparse.ArgumentParser, *, command: str) -> None:
    """``chat`` and ``resume``'s session options, policy flags, ``--timeout`` and (chat) ``--session``."""
    group = parser.add_argument_group("session options (checked against what the agent offers)")
    group.add_argument(
        "--model",
        metavar="ID",
        default=None,
        help="the session's model (its config option of category model; a v1 agent's models)",
    )
    group.add_argument(
        "--mode", metavar="ID", default=None, help="the session's mode (category mode; a v1 agent's modes)"
    )
    group.add_argument(
        "--set",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        dest="set_options",
        help="set any config option the agent advertises (a select's value id, or true/false); repeatable",
    )
    group.add_argument(
        "--system-prompt",
        metavar="TEXT|@FILE",
        default=None,
        help="a system prompt for a new (or forked) session where the agent takes one (@FILE: read from FILE)",
    )
    group.add_argument(
        "--fork",
        action="store_true",
        help="continue in a fork of the session (session/fork) instead of the session itself"
        + (": with -c or --session" if command == "chat" else ""),
    )
    if command == "chat":
        group.add_argument(
            "--session",
            metavar="NAME",
            default=None,
            dest="session_name",
            help="a session by a name of yours: continued when this agent has one of that name, else started "
            "and given the name (`acp-session sessions show NAME`)",
        )
    policy = parser.add_argument_group("permission policy (default: ask at the terminal)")
    policy.add_argument(
        "--approve-reads",
        action="store_true",
        help="approve reads and searches, ask about the rest (edits, commands, ...)",
    )
    policy.add_argument("--deny-all", action="store_true", help="reject every permission request")
    policy.add_argument(
        "--allow",
        metavar="KIND[:GLOB]",
        action=_Rule,
        const="allow",
        help="approve requests of this tool kind (read, edit, execute, ...; * any) whose paths all match GLOB "
        "(relative to --cwd; ** any folders), e.g. --allow edit:src/**; tried before the rest; repeatable",
    )
    policy.add_argument(
        "--deny",
        metavar="KIND[:GLOB]",
        action=_Rule,
        const="deny",
        help="reject requests matching KIND[:GLOB]; --allow and --deny rules are tried in the order given",
    )
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=_turn_seconds,
        default=None,
        help="cancel a turn still running after SECONDS (exit code 3, cancelled)",
    )


def finish_daily_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Check the daily flags together and fill in what later steps use (``args.quiet``, ``args.policy``,
    ``args.settings``, ``args.system_prompt_text``); a problem is a usage error (exit 2)."""
    fmt = getattr(args, "format", None)
    if fmt is not None:
        if args.json and fmt != "json":
            parser.error(f"--json and --format {fmt} do not go together")
        args.json = args.json or fmt == "json"
    args.quiet = fmt == "quiet"
    if not hasattr(args, "set_options"):
        return
    # (key, value, where it came from, optional): the command line's, else the config file's (config_file.py),
    # whose [defaults] are optional: skipped for an agent that does not offer them.
    settings: list[tuple[str, str, str, bool]] = []
    from_file: list[tuple[str, str, str, bool]] = getattr(args, "file_settings", [])
    for flag, value in (("--model", args.model), ("--mode", args.mode)):
        if value is not None:
            if not value.strip():
                parser.error(f"{flag} is empty")
            settings.append((flag[2:], value.strip(), flag, False))
        else:
            settings += [setting for setting in from_file if setting[2].endswith(f" {flag[2:]}")]
    for text in args.set_options:
        key, equals, value = text.partition("=")
        if not equals or not key.strip() or not value.strip():
            parser.error(f"--set {text!r}: expected KEY=VALUE")
        settings.append((key.strip(), value.strip(), "--set", False))
    settings += [setting for setting in from_file if setting[2].endswith(" set")]
    args.settings = settings
    args.system_prompt_text = _system_prompt(args.system_prompt, parser)
    if args.fork and args.command == "chat" and not (args.continue_ or args.session_name):
        parser.error("--fork needs a session to fork: add -c or --session NAME (or use resume ID --fork)")
    if getattr(args, "session_name", None) is not None:
        if not args.session_name.strip():
            parser.error("--session is empty")
        if args.continue_:
            parser.error("-c and --session do not go together")
    try:
        args.policy = policy_from(args)
    except ValueError as exc:
        parser.error(str(exc))


def _system_prompt(value: str | None, parser: argparse.ArgumentParser) -> str | None:
    if value is None or not value.startswith("@"):
        return value
    path = Path(value[1:]).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        parser.error(f"--system-prompt {value}: cannot read {path}: {getattr(exc, 'strerror', None) or exc}")
    if not text.strip():
        parser.error(f"--system-prompt {value}: the file is empty")
    return text


def policy_from(args: Any) -> PermissionPolicy | None:
    """The permission policy the flags ask for (None: ask at the terminal, as before); ``ValueError`` names a
    bad rule or presets that contradict each other."""
    presets = [
        name
        for name, on in (
            ("--approve-all", getattr(args, "yes", False)),
            ("--approve-reads", getattr(args, "approve_reads", False)),
            ("--deny-all", getattr(args, "deny_all", False)),
        )
        if on
    ]
    if len(presets) > 1:
        raise ValueError(f"{' and '.join(presets)} do not go together")
    preset = presets[0] if presets else None
    rules: list[PermissionRule] = []
    for action, text in getattr(args, "policy_rules", None) or []:
        try:
            rules.append(PermissionRule.parse(action, text))
        except ValueError as exc:
            raise ValueError(f"--{action} {text!r}: {exc}") from None
    if preset is None and not rules:
        return None
    base = {
        "--approve-all": PermissionPolicy.approve_all,
        "--approve-reads": PermissionPolicy.approve_reads,
        "--deny-all": PermissionPolicy.deny_all,
        None: PermissionPolicy.ask,
    }[preset]()
    return base.with_rules(*rules).with_root(args.cwd)
