"""A ``usage_update`` whose token count is unknown is skipped, not reported as a broken frame.

Both schemas require ``used`` and ``size`` (non-negative integers), and the generated types keep them
required, so the lenient pass of ``codec.decoder`` (which defaults only optional fields) cannot save such an
update. Real agents do send ``"used": null`` (claude-agent-acp 0.23.1 sums token counts the model did not
report, and JavaScript writes the resulting NaN as ``null``). Without this, the update failed to decode and
the connection counted and logged it as a frame that breaks the protocol (``-32602``).

The update says nothing the model can hold (``ContextUsage.used`` is a count), so it is dropped: the decoder
returns a ``SkippedUsage``, which the adapter logs through its connection's ``peer_log`` (one line, then
counted) and drops; the next usage update with numbers replaces it anyway, and ``cost`` is cumulative.
Anything else wrong with the frame is still the ordinary decode error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import msgspec

from .._counted_log import CountedLog
from ..codec import TypedDecoder

__all__ = ["SkippedUsage", "skip_unknown_usage"]

_log = logging.getLogger("acp_session.protocol")
_plain = msgspec.json.Decoder()
_COUNTS = ("used", "size")


def _unknown_counts(data: bytes | memoryview) -> tuple[dict[str, Any], list[str]] | None:
    """The params and the names of the null or absent counts, when the frame is such a usage update."""
    try:
        params = _plain.decode(data)
    except msgspec.DecodeError:
        return None
    update = params.get("update") if isinstance(params, dict) else None
    if not isinstance(update, dict) or update.get("sessionUpdate") != "usage_update":
        return None
    unknown = [name for name in _COUNTS if update.get(name) is None]
    return (params, unknown) if unknown else None


@dataclass(frozen=True)
class SkippedUsage:
    """What ``skip_unknown_usage`` decodes a usage update without its counts to: the handler logs it and skips."""

    session_id: Any
    unknown: tuple[str, ...]

    def report(self, log: CountedLog) -> None:
        log.info(
            "usage updates without their counts",
            "skipped a usage_update with %s null or missing (session %s): the agent did not know the count",
            " and ".join(self.unknown),
            self.session_id,
            logger=_log,
        )


def skip_unknown_usage(decode: Callable[[bytes | memoryview], Any]) -> Callable[[bytes | memoryview], Any]:
    """``decode`` for ``session/update`` params, returning a ``SkippedUsage`` for a usage update whose ``used``
    or ``size`` is null or missing (and that is otherwise well formed); the route's handler skips it.

    The result publishes ``decode``'s ``msgspec_decoder`` (a ``TypedDecoder``): a frame its strict pass accepts
    is decoded unchanged, so the one-pass fast path of the rpc layer stays as it was."""

    def decode_update(data: bytes | memoryview) -> Any:
        try:
            return decode(data)
        except msgspec.ValidationError:
            found = _unknown_counts(data)
            if found is None:
                raise
            params, unknown = found
            # Only the missing counts may be wrong: with numbers in their place the update must decode.
            update = {**params["update"], **dict.fromkeys(unknown, 0)}
            decode(msgspec.json.encode({**params, "update": update}))
        return SkippedUsage(params.get("sessionId"), tuple(unknown))

    published = getattr(decode, "msgspec_decoder", None)
    if published is not None:
        cast(TypedDecoder, decode_update).msgspec_decoder = published
    return decode_update
