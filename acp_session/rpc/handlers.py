"""Handler registrations: what runs for an incoming method, and how its params are decoded."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from ..codec import TypedDecoder
from ..errors import InvalidParams

__all__ = [
    "DECODE_ERRORS",
    "Decoder",
    "RESULT_DECODERS",
    "Handler",
    "TypedDecoder",
    "accepts_buffer",
    "invalid_params",
    "json_decode",
    "result_decoders",
    "typed_decoder_of",
]

Decoder = Callable[[bytes], Any]
"""Raw JSON bytes of ``params``/``result`` -> typed object; raises ``msgspec.ValidationError`` when invalid."""


json_decode: Decoder = msgspec.json.decode

_NULL = b"null"
_AT_PATH = re.compile(r"^(?P<reason>.*) - at `(?P<path>[^`]*)`$", re.DOTALL)


_BUFFER_OK: dict[Any, bool] = {}
_BUFFER_OK_LIMIT = 1024  # decoders are usually module constants; an unbounded stream of new ones is not cached


def accepts_buffer(decode: Callable[..., Any]) -> bool:
    """msgspec decoders read any buffer, so a ``msgspec.Raw`` slice can be passed without copying.

    Asked once per outgoing request, so the answer is remembered per decoder.
    """
    try:
        known = _BUFFER_OK.get(decode)
    except TypeError:  # an unhashable callable object
        known, cacheable = None, False
    else:
        cacheable = len(_BUFFER_OK) < _BUFFER_OK_LIMIT
    if known is not None:
        return known
    ok = (
        decode is msgspec.json.decode
        or isinstance(getattr(decode, "__self__", None), msgspec.json.Decoder)
        or _published_decoder(decode) is not None
    )
    if cacheable:
        _BUFFER_OK[decode] = ok
    return ok


def _published_decoder(decode: Any) -> msgspec.json.Decoder[Any] | None:
    if isinstance(decode, TypedDecoder) and isinstance(decode.msgspec_decoder, msgspec.json.Decoder):
        return decode.msgspec_decoder
    return None


def typed_decoder_of(decode: Any) -> msgspec.json.Decoder[Any] | None:
    """The ``msgspec.json.Decoder`` whose successful result ``decode`` returns unchanged, if known.

    That is ``decode`` itself when it is a bound ``msgspec.json.Decoder(...).decode``, or the decoder a
    ``TypedDecoder`` publishes (``acp_session.codec.decoder``: its fast pass).
    """
    owner = getattr(decode, "__self__", None)
    if isinstance(owner, msgspec.json.Decoder) and getattr(decode, "__name__", None) == "decode":
        return owner
    return _published_decoder(decode)


ResultDecoders = tuple[Callable[[Any], Any] | None, bool]
RESULT_DECODERS: dict[Any, ResultDecoders] = {}
"""``result_decoders``' answers so far, by decoder (read directly on the hot path: a dict lookup, no call)."""


def result_decoders(decode: Callable[..., Any]) -> ResultDecoders:
    """How to decode a response's result for ``decode``: ``(strict first pass or None, accepts a buffer)``.

    The first pass is the published decoder of a ``TypedDecoder`` (its strict pass, tried before the lenient
    function itself). Asked once per answer, so the answer is remembered per decoder (like ``accepts_buffer``).
    """
    try:
        return RESULT_DECODERS[decode]
    except KeyError:
        cacheable = len(RESULT_DECODERS) < _BUFFER_OK_LIMIT
    except TypeError:  # an unhashable callable object
        cacheable = False
    published = _published_decoder(decode)
    plan = (None if published is None else published.decode, accepts_buffer(decode))
    if cacheable:
        RESULT_DECODERS[decode] = plan
    return plan


def as_decoder(decode: Decoder | type[msgspec.Struct]) -> Decoder:
    """Params decoders may be given as a msgspec ``Struct`` type: decode with a plain typed Decoder."""
    if isinstance(decode, type) and issubclass(decode, msgspec.Struct):
        return msgspec.json.Decoder(decode).decode
    return decode


@dataclass(slots=True)
class Handler:
    fn: Callable[[Any], Any]
    decode: Decoder
    is_async: bool
    buffer_ok: bool
    batch: Callable[[list[Any]], Any] | None = None
    """Optional sync handler for a run of consecutive params, equivalent to ``fn`` on each in order."""
    waits: bool = False
    """A request handler that only waits for an event (no work): it runs without a concurrency slot."""
    lossless: bool = False
    """A request handler that must see its params exactly as sent: a frame whose text had to be repaired
    (``repair.py``) gets ``-32602`` instead."""
    inline: bool = False
    """A sync request handler the reader runs itself, before it reads the next message (its effect, such as
    handlers it registers, is seen by every message after it)."""

    @classmethod
    def of(
        cls,
        fn: Callable[[Any], Any],
        decode: Decoder,
        batch: Callable[[list[Any]], Any] | None = None,
        *,
        waits: bool = False,
        lossless: bool = False,
        inline: bool = False,
    ) -> Handler:
        is_async = inspect.iscoroutinefunction(fn)
        if inline and is_async:
            raise TypeError("an inline request handler must be a plain (sync) function: the reader runs it")
        batch = None if is_async else batch
        return cls(fn, decode, is_async, accepts_buffer(decode), batch, waits, lossless, inline)

    def decode_params(self, params: msgspec.Raw | None) -> Any:
        if params is None:
            return self.decode(_NULL)
        return self.decode(params if self.buffer_ok else bytes(params))


DECODE_ERRORS = (msgspec.DecodeError, RecursionError)
"""What decoding a peer's params or result may raise: bad values, or nesting deeper than the decoder allows."""


def invalid_params(exc: msgspec.DecodeError | RecursionError) -> InvalidParams:
    """``-32602`` whose data names the failing field path, e.g. ``{"path": "$.update.content", ...}``."""
    if isinstance(exc, RecursionError):
        return InvalidParams(data={"path": "$", "reason": "nested too deeply"})
    text = str(exc)
    match = _AT_PATH.match(text)
    if match is None:
        return InvalidParams(data={"path": "$", "reason": text})
    return InvalidParams(data={"path": match["path"], "reason": match["reason"]})
