"""One-pass decoding of notification frames whose params decoder is a known msgspec type.

The generic path decodes the envelope (params kept as ``msgspec.Raw``), lets ``RpcCore`` classify it, then
decodes the params a second time with the handler's decoder. For a notification method registered with a
msgspec decoder of a ``Struct`` type, ``FastNotifications`` decodes the whole frame
``{"jsonrpc": "2.0", "method": <method>, "params": <T>}`` in a single pass instead: one tagged union over
all such methods (the tag field is ``method``), with unknown fields forbidden. Anything else — another
method, an ``id`` (a request), a missing field, a wrong ``jsonrpc``, invalid params, malformed JSON — fails
that decode, and the frame then takes the generic path unchanged, so replies and errors stay exactly the
same (``-32600``, ``-32602`` reports, lenient decoding, ...). Only a frame the generic path would deliver to
the same handler with the same decoded value can succeed here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, Union

import msgspec

from .handlers import Handler, typed_decoder_of
from .messages import CANCEL_REQUEST_METHOD

__all__ = ["PEEK_WINDOW", "FastNotifications"]

PEEK_WINDOW = 64
"""The fast decode is only tried when ``"method"`` occurs in a frame's first bytes: encoders write the
envelope keys first, and large responses then never pay for a failed attempt."""


def _fits(tp: Any) -> bool:
    # A Struct always decodes from a JSON object (or an array when array_like): exactly the params shapes
    # the generic path accepts. Other types (scalars, unions with scalars) stay on the generic path.
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)


class FastNotifications:
    """Built from the registered notification handlers; ``decode`` is None when none qualifies."""

    __slots__ = ("decode", "decode_arrays", "handlers")

    def __init__(self, handlers: dict[str, Handler]) -> None:
        self.handlers: dict[type, tuple[str, Handler]] = {}
        groups: dict[tuple[Any, Any, bool], list[type]] = {}
        for method, handler in handlers.items():
            if method == CANCEL_REQUEST_METHOD:
                continue
            typed = typed_decoder_of(handler.decode)
            if typed is None or not _fits(typed.type):
                continue
            frame = msgspec.defstruct(
                "NotificationFrame",
                [("jsonrpc", Literal["2.0"]), ("params", typed.type)],
                tag_field="method",
                tag=method,
                forbid_unknown_fields=True,
                gc=False,  # a frame holds only decoded JSON; untracked, a block of them costs the collector nothing
            )
            self.handlers[frame] = (method, handler)
            groups.setdefault((typed.dec_hook, typed.float_hook, typed.strict), []).append(frame)
        typed_decoders = [
            msgspec.json.Decoder(
                Union[tuple(frames)],  # noqa: UP007
                dec_hook=dec_hook,
                float_hook=float_hook,
                strict=strict,
            )
            for (dec_hook, float_hook, strict), frames in groups.items()
        ]
        decoders = [d.decode for d in typed_decoders]
        self.decode_arrays = tuple(
            msgspec.json.Decoder(
                list[Union[tuple(frames)]],  # type: ignore[misc]  # noqa: UP007
                dec_hook=dec_hook,
                float_hook=float_hook,
                strict=strict,
            ).decode
            for (dec_hook, float_hook, strict), frames in groups.items()
        )
        """Per decoder group, a JSON array of its frames in one call: ``RpcCore`` decodes a ``LineBlock``'s lines
        with them, joined by commas (a block of one group's methods, the usual case, needs one call)."""
        self.decode: Callable[[bytes], Any] | None
        if not decoders:
            self.decode = None
        elif len(decoders) == 1:
            self.decode = decoders[0]
        else:
            self.decode = _first_of(decoders)


def _first_of(decoders: Sequence[Callable[[bytes], Any]]) -> Callable[[bytes], Any]:
    last = decoders[-1]
    rest = decoders[:-1]

    def decode(frame: bytes) -> Any:
        for one in rest:
            try:
                return one(frame)
            except msgspec.ValidationError:
                pass
        return last(frame)

    return decode
