"""Encode and decode ACP wire values: one fast msgspec pass, a lenient pass only when needed.

A well-formed message of known variants is decoded by a cached ``msgspec.json.Decoder`` straight
into the generated structs. If that fails validation, the bytes are decoded once more into plain
JSON values and rebuilt by ``acp_session._schema_runtime.lenient_convert``, which keeps
unknown variants and applies the schema's lenient-decoding marks. Malformed JSON raises
``msgspec.DecodeError``; values that are wrong even leniently raise ``msgspec.ValidationError``
with the JSON path of the offending field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast, overload, runtime_checkable

import msgspec

from acp_session._schema_runtime import alternatives_dec_hook, lenient_convert

__all__ = ["TypedDecoder", "convert", "decode", "decoder", "encode", "to_builtins"]


@runtime_checkable
class TypedDecoder(Protocol):
    """A decode function that publishes the ``msgspec.json.Decoder`` of its strict first pass.

    The contract: whatever ``msgspec_decoder.decode(data)`` accepts, calling the function on the same ``data``
    returns unchanged (the function may accept more, e.g. leniently). ``decoder`` makes such functions; the rpc
    layer (``acp_session.rpc.handlers``) uses the published decoder to decode a whole notification frame,
    envelope and params, in one msgspec pass, and a response's result straight from a slice of the frame.
    """

    msgspec_decoder: msgspec.json.Decoder[Any]

    def __call__(self, data: bytes | memoryview, /) -> Any: ...


T = TypeVar("T")

_encoder = msgspec.json.Encoder()
_decoders: dict[Any, Callable[[bytes | memoryview], Any]] = {}


def encode(value: object) -> bytes:
    """Encode a wire value (structs, unknown variants, plain JSON values) to compact JSON."""
    return _encoder.encode(value)


def to_builtins(value: object) -> Any:
    """The plain JSON form (dicts, lists, scalars) of a wire value."""
    return msgspec.to_builtins(value)


@overload
def decoder(tp: type[T]) -> Callable[[bytes | memoryview], T]: ...
@overload
def decoder(tp: Any) -> Callable[[bytes | memoryview], Any]: ...
def decoder(tp: Any) -> Callable[[bytes | memoryview], Any]:
    """A cached decode function for ``tp`` (a generated struct, union or alias)."""
    cached = _decoders.get(tp)
    if cached is not None:
        return cached
    fast_decoder = msgspec.json.Decoder(tp, dec_hook=alternatives_dec_hook)
    fast = fast_decoder.decode
    plain = msgspec.json.Decoder().decode

    def decode_value(data: bytes | memoryview) -> Any:
        try:
            return fast(data)
        except msgspec.ValidationError:
            return lenient_convert(plain(data), tp)

    # A ``TypedDecoder``: whatever ``fast_decoder`` accepts, ``decode_value`` returns unchanged, so a Connection
    # may decode a whole notification frame with it in one pass.
    cast(TypedDecoder, decode_value).msgspec_decoder = fast_decoder
    _decoders[tp] = decode_value
    return decode_value


@overload
def decode(data: bytes | memoryview | str, tp: type[T]) -> T: ...
@overload
def decode(data: bytes | memoryview | str, tp: Any) -> Any: ...
def decode(data: bytes | memoryview | str, tp: Any) -> Any:
    """Decode JSON ``data`` into ``tp``; see the module docstring for the leniency rules."""
    if isinstance(data, str):
        data = data.encode()
    return decoder(tp)(data)


@overload
def convert(obj: Any, tp: type[T]) -> T: ...
@overload
def convert(obj: Any, tp: Any) -> Any: ...
def convert(obj: Any, tp: Any) -> Any:
    """Like ``decode``, for a value that is already plain JSON (dicts, lists, scalars)."""
    return lenient_convert(obj, tp)
