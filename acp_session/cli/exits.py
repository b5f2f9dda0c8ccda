"""The CLI's exit codes: the stop reason of the (last) turn, or what went wrong (documented in docs/cli.md)."""

from __future__ import annotations

__all__ = [
    "EXIT_CODES",
    "EXIT_ERROR",
    "EXIT_HELP",
    "EXIT_HELP_OTHER",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_OTHER",
    "EXIT_UNASKED",
    "EXIT_USAGE",
    "exit_code",
]

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
EXIT_UNASKED = 9  # a permission question nobody could answer (no terminal): answered cancelled, the turn ended well

EXIT_HELP = """\
exit codes:
  0    the turn ended with end_turn (interactive: the last turn did; no turn at all is 0 too)
  1    error: the turn ended with stop reason error, the prompt failed, or the agent could not be run
  2    usage error (also: a --model/--mode/--set value the agent does not offer)
  3    cancelled (Ctrl-C once cancels the active work; so does --timeout)
  4    refusal
  5    max_tokens
  6    max_turn_requests
  7    any other stop reason
  8    the agent needs a login first (the message says how; see `acp-session login`)
  9    the turn ended, but a permission question could not be asked (stdin is not a terminal and its input had
       ended) and was answered cancelled: give a policy (--approve-all, --deny-all, --allow ...)
  130  interrupted (Ctrl-C twice)
"""


def exit_code(stop_reason: str | None) -> int:
    if stop_reason is None:
        return EXIT_ERROR
    return EXIT_CODES.get(stop_reason, EXIT_OTHER)


EXIT_HELP_OTHER = """\
exit codes:
  0    done
  1    the agent failed or could not be run (the message says why)
  2    usage error
  8    the agent needs a login first (the message says how)
  130  interrupted (Ctrl-C)
"""
