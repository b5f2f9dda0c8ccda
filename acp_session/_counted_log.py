"""Log lines a peer can cause once per message, counted instead of repeated (docs/robustness.md, "Logs").

A peer that repeats a mistake 25 000 times (answers to request ids nobody sent, malformed cancels, updates a
v1 client cannot hold, requests that fail) must not write 25 000 log lines. Each connection (or provider) has one
``CountedLog``; each kind of line (a fixed phrase of ours, never text from the peer, so the kinds stay few) is
logged in full the first time, then only counted: one short line when its count reaches 10, 100, 1 000, ...,
and at ``close()`` one line with the total of each kind that came more than once.
"""

from __future__ import annotations

import logging

__all__ = ["FURTHER", "CountedLog"]

FURTHER = "; further ones of this kind are counted, not logged"
"""What the first line of each kind ends with."""


class CountedLog:
    """The log lines of one peer, by kind: the first in full, the rest counted."""

    __slots__ = ("_loggers", "_reported", "counts", "logger", "peer")

    def __init__(self, logger: logging.Logger, peer: str) -> None:
        self.logger = logger
        self.peer = peer
        """Who the lines are about (``Connection.peer_name``)."""
        self.counts: dict[str, int] = {}
        """How many times each kind came."""
        self._loggers: dict[str, tuple[logging.Logger, int]] = {}
        self._reported: dict[str, int] = {}

    def log(
        self,
        level: int,
        kind: str,
        msg: str,
        *args: object,
        exc_info: bool = False,
        logger: logging.Logger | None = None,
    ) -> None:
        """Count one ``kind``; the first is logged as ``msg % args`` (with the traceback if ``exc_info``) to
        ``logger`` (the layer's own; default the one this log was made with), the counts to the same."""
        count = self.counts.get(kind, 0) + 1
        self.counts[kind] = count
        if count == 1:
            log = logger or self.logger
            self._loggers[kind] = (log, level)
            self._reported[kind] = 1
            if log.isEnabledFor(level):
                log.log(level, msg + FURTHER, *args, exc_info=exc_info)
        elif _is_power_of_ten(count):
            self._reported[kind] = count
            log, level = self._loggers[kind]
            log.log(level, "%s: %d %s so far (counted, not logged)", self.peer, count, kind)

    def debug(self, kind: str, msg: str, *args: object, logger: logging.Logger | None = None) -> None:
        self.log(logging.DEBUG, kind, msg, *args, logger=logger)

    def info(self, kind: str, msg: str, *args: object, logger: logging.Logger | None = None) -> None:
        self.log(logging.INFO, kind, msg, *args, logger=logger)

    def warning(self, kind: str, msg: str, *args: object, logger: logging.Logger | None = None) -> None:
        self.log(logging.WARNING, kind, msg, *args, logger=logger)

    def exception(self, kind: str, msg: str, *args: object, logger: logging.Logger | None = None) -> None:
        """An error with the traceback of the exception being handled (only the first of its kind has one)."""
        self.log(logging.ERROR, kind, msg, *args, exc_info=True, logger=logger)

    def close(self) -> None:
        """One line (at info level, or the kind's own if lower) per kind whose count was not reported yet."""
        for kind, count in self.counts.items():
            if count > self._reported[kind]:
                self._reported[kind] = count
                log, level = self._loggers[kind]
                log.log(
                    min(logging.INFO, level), "%s: %d %s in all (only the first was logged)", self.peer, count, kind
                )


def _is_power_of_ten(n: int) -> bool:
    while n % 10 == 0:
        n //= 10
    return n == 1
