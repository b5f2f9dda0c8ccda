"""How an agent's process ended, in words: the transport's own reason, also the errors' and the CLI's."""

from __future__ import annotations

import signal

__all__ = ["exit_words"]


def exit_words(returncode: int | None) -> str:
    """How an agent's process ended, in words (a subprocess transport's ``ConnectionClosed`` reason; the CLI's)."""
    if returncode is None:
        return "the connection to the agent closed"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"the agent was killed ({name})"
    return "the agent exited" if returncode == 0 else f"the agent exited with code {returncode}"
