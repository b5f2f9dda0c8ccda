"""Where a scenario reads and writes files, runs commands and asks the user.

In v2 (and for a v1 client without the ``fs`` capability) the agent uses its own disk. A v1 client that
advertises ``fs.readTextFile`` / ``fs.writeTextFile`` / ``terminal`` is asked instead (``fs/*``,
``terminal/*``: v1_front.py), so an editor sees unsaved buffers and runs the command itself; a v1 client that
offers form elicitation is asked questions (``elicitation/create``). Scenarios only see this interface.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import anyio

__all__ = ["CommandResult", "Workspace", "WorkspaceError"]


class WorkspaceError(Exception):
    """Reading or writing failed (a local OSError, or the client's error answer)."""


@dataclass
class CommandResult:
    terminal_id: str
    output: str
    exit_code: int | None


class Workspace:
    """The agent's own disk; no terminals (``runs_commands`` is False)."""

    runs_commands = False

    async def read_text(self, path: str) -> str | None:
        """The file's text, or None when it does not exist."""

        def read() -> str | None:
            try:
                with open(path, encoding="utf-8") as file:
                    return file.read()
            except FileNotFoundError:
                return None

        try:
            return await anyio.to_thread.run_sync(read)
        except OSError as exc:
            raise WorkspaceError(str(exc)) from None

    async def write_text(self, path: str, text: str) -> None:
        def write() -> None:
            directory = os.path.dirname(path)
            if directory and not os.path.isdir(directory):
                os.mkdir(directory)  # one level only: the session's cwd itself must exist
            with open(path, "w", encoding="utf-8") as file:
                file.write(text)

        try:
            await anyio.to_thread.run_sync(write)
        except OSError as exc:
            raise WorkspaceError(str(exc)) from None

    async def start_command(self, command: str, args: list[str], cwd: str) -> str:
        """Start a command in a client terminal: its terminal id (only when ``runs_commands``)."""
        raise WorkspaceError("this client runs no terminals")

    async def finish_command(self, terminal_id: str) -> CommandResult:
        """Wait for the command, read its output and release the terminal."""
        raise WorkspaceError("this client runs no terminals")

    async def elicit(self, message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        """Ask the user through the client (a form); its answer, or None when the client offers no form
        elicitation (then the agent does not ask: elicitation.mdx)."""
        return None

    async def elicit_url(self, message: str, url: str) -> dict[str, Any] | None:
        """Send the user to ``url`` through the client (URL elicitation; the agent then says it is complete); the
        answer, or None when the client offers no URL elicitation."""
        return None
