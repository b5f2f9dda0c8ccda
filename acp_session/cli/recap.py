"""Where you were, when ``chat -c`` (or ``chat --session NAME``) continues a session: a few dim lines on stderr
with how many prompts came before, the last prompt and the start of the reply to it (``resume`` replays the
whole history instead; ``sessions history`` shows it on demand); and the command that comes back to it later."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence

from acp_session.conversation import Message, TimelineEntry, ToolCall

from .safe_text import terminal_safe

__all__ = ["REPLY_LINES", "continue_command", "recap_lines"]

REPLY_LINES = 3
"""At most this many lines of the last reply are shown (the rest is counted)."""

WIDTH = 100
"""Each line of the recap is cut to this many characters."""


def _cut(text: str) -> str:
    text = terminal_safe(text)
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "\u2026"


def recap_lines(entries: Sequence[TimelineEntry], session: str, shown_as: str | None = None) -> list[str]:
    """The recap of a session's replayed history (``shown_as``: the name it was continued by): a header, the
    last prompt, then the reply's first lines and how many tool calls it made. Just the header for no history."""
    ref = shown_as or session
    prompts = [index for index, entry in enumerate(entries) if type(entry) is Message and entry.role == "user"]
    header = f"continuing session {ref}" if shown_as is None else f"continuing session {ref!r} ({session})"
    if not prompts:
        return [header]
    history = shlex.join(["acp-session", "sessions", "history", ref])
    count = f"{len(prompts)} earlier prompt{'s' if len(prompts) != 1 else ''}"
    lines = [f"{header}: {count} (`{history}` shows them all); the last:"]
    last = entries[prompts[-1]]
    assert isinstance(last, Message)
    prompt_lines = last.text.strip().splitlines() or [""]
    lines.append("  > " + _cut(prompt_lines[0]) + (" \u2026" if len(prompt_lines) > 1 else ""))
    after = entries[prompts[-1] + 1 :]
    replies = [entry.text for entry in after if type(entry) is Message and entry.role == "agent" and entry.text]
    reply = [line for line in "\n".join(replies).splitlines() if line.strip()]
    for line in reply[:REPLY_LINES]:
        lines.append("  " + _cut(line))
    if len(reply) > REPLY_LINES:
        lines.append(f"  \u2026 {len(reply) - REPLY_LINES} more lines")
    tools = sum(1 for entry in after if type(entry) is ToolCall)
    if tools:
        lines.append(f"  ({tools} tool call{'s' if tools != 1 else ''})")
    return lines


def continue_command(args: argparse.Namespace) -> str:
    """How to continue this chat later: ``acp-session chat -c`` (or ``--session NAME`` for a named one) with
    this run's agent as it was given (a config profile by its name; nothing for the default agent or the
    config's ``default_agent``), its ``--url`` (never a credential) and its directory."""
    name = getattr(args, "session_name", None)
    words = ["acp-session", "chat", *(["--session", name] if name else ["-c"])]
    sources = getattr(args, "config_sources", {})
    profile = getattr(args, "profile", None)
    if profile is not None:
        if sources.get("profile") == "command line":  # --agent PROFILE (not the config's default_agent)
            words += ["--agent", profile]
    elif args.agent is not None and sources.get("agent", "command line") == "command line":
        words += ["--agent", args.agent]
    if getattr(args, "url", None):
        words += ["--url", args.agent_argv[0]]  # the shown form: no credentials in it
    if args.cwd_given is not None:
        words += ["--cwd", args.cwd_given]
    return shlex.join(words)
