"""``--url``: run the remote transport's checks (``checks_remote``) one after another, each on its own connection.

The agent checks run through acp-session's remote transport like any other agent; these judge the HTTP and
WebSocket themselves. A check that raises something unexpected (the server hung up, a timeout) fails with what
happened, never a traceback.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio

from acp_session.transport.remote import RemoteDialer

from .checks_remote import RemoteContext, remote_checks_for
from .probe import Fail, NotApplicable

__all__ = ["REMOTE_ONLY_OVER_STDIO", "RemoteResult", "remote_not_run", "run_remote_checks"]

REMOTE_ONLY_OVER_STDIO = frozenset(
    {
        "framing",
        "stdout-utf8",
        "one-line-messages",
        "batch-empty",
        "batch-notifications",
        "batch-requests",
        "batch-invalid-entries",
        "connection-survives",
        "stdin-eof-exit",
    }
)
"""Agent checks of the raw pipe (newline framing, its encoding, batches, raw bad lines, the end of stdin): over HTTP and
WebSocket the transport's own checks (``http-batch``, ``ws-text-frames``) judge what they would."""


@dataclass
class RemoteResult:
    id: str
    title: str
    rule: str
    status: str  # "pass", "fail", "warn" or "n/a", as the agent checks
    message: str
    seconds: float
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def notices(self) -> tuple[list[str], list[str]]:
        return self.warnings, self.notes


async def run_remote_checks(dialer: RemoteDialer, timeout: float, only: Sequence[str] = ()) -> list[RemoteResult]:
    results = []
    for c in remote_checks_for(dialer.profile):
        if only and c.id not in only:
            continue
        ctx = RemoteContext(dialer, timeout)
        started = time.monotonic()
        whole = anyio.move_on_after(4 * timeout + 5)
        try:
            with whole:
                note = await c.fn(ctx)
            if whole.cancelled_caught:
                raise Fail(c.rule, f"the check did not finish within {4 * timeout + 5:g}s")
        except Fail as exc:
            status, message = "fail", str(exc)
        except NotApplicable as exc:
            status, message = "n/a", str(exc)
        except TimeoutError:  # one step's own --timeout
            status, message = "fail", f"{c.rule}: no answer within {timeout:g}s"
        except Exception as exc:  # the server hung up, refused the connection, sent nonsense
            status, message = "fail", f"{c.rule}: {type(exc).__name__}: {dialer.redact(str(exc)) or 'no detail'}"
        else:
            status = "warn" if ctx.warnings else "pass"
            message = "; ".join([*ctx.warnings, *([note] if note else []), *ctx.notes])
        results.append(
            RemoteResult(c.id, c.title, c.rule, status, message, time.monotonic() - started, ctx.warnings, ctx.notes)
        )
    return results


def remote_not_run(dialer: RemoteDialer, problem: str, only: Sequence[str] = ()) -> list[RemoteResult]:
    """Every row n/a: the agent could not be reached (``problem`` says why), and each row would only repeat it."""
    return [
        RemoteResult(c.id, c.title, c.rule, "n/a", f"not run: {problem}", 0.0)
        for c in remote_checks_for(dialer.profile)
        if not only or c.id in only
    ]
