"""One-pass decoding of notification frames whose params decoder is a known msgspec type.

The generic path decodes the envelope (params kept as ``msgspec.Raw``), lets ``RpcCore`` classify it, then
decodes the params a second time with the handler's decoder. For a notification method registered with a
msgspec decoder of a ``Struct`` type, ``FastNotifications`` decodes the whole frame
``{"jsonrpc": "2.0", "method": <method>, "params": <T>}`` in a single pass instead, with unknown fields
forbidden and ``method`` required: that method's own frame type, or a union tagged by ``method`` when a
decoder group has several methods (``FastNotifications`` says why there are two). Anything else — another
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
    """Built from the registered notification handlers; ``decode`` is None when none qualifies.

    Each typed method gets two frame types. Its own frame (``method`` a required ``Literal`` field) decodes a
    frame, or a block's array of frames, that must be of that method: nothing to look ahead for and nothing
    to group afterwards, and a frame without ``method`` fails it. A tagged frame (``method`` the tag) exists
    for the unions of a decoder group of several methods (a union needs the tag; alone, msgspec would also
    take a tagged struct whose tag is missing, which is why a lone method never decodes with it).
    """

    __slots__ = ("decode", "decode_arrays", "handlers", "uniform")

    def __init__(self, handlers: dict[str, Handler]) -> None:
        self.handlers: dict[type, tuple[str, Handler]] = {}
        """Each frame type (a method's own, and its tagged one where it has one) to its method and handler."""
        groups: dict[tuple[Any, Any, bool], list[tuple[str, Handler, Any]]] = {}
        for method, handler in handlers.items():
            if method == CANCEL_REQUEST_METHOD:
                continue
            typed = typed_decoder_of(handler.decode)
            if typed is None or not _fits(typed.type):
                continue
            groups.setdefault((typed.dec_hook, typed.float_hook, typed.strict), []).append(
                (method, handler, typed.type)
            )
        decoders: list[Callable[[bytes], Any]] = []
        arrays: list[tuple[Callable[[bytes | bytearray], Any], bool]] = []
        unions: list[tuple[Callable[[bytes | bytearray], Any], bool]] = []
        for (dec_hook, float_hook, strict), members in groups.items():
            hooks: dict[str, Any] = {"dec_hook": dec_hook, "float_hook": float_hook, "strict": strict}
            for method, handler, params in members:
                own = _frame(method, params, tagged=False)
                self.handlers[own] = (method, handler)
                arrays.append((msgspec.json.Decoder(list[own], **hooks).decode, True))  # type: ignore[valid-type]
            if len(members) == 1:  # a lone method: its own frame (alone, a tagged one would not need its tag)
                decoders.append(msgspec.json.Decoder(own, **hooks).decode)
                continue
            tagged = [_frame(method, params, tagged=True) for method, _, params in members]
            for frame, (method, handler, _) in zip(tagged, members, strict=True):
                self.handlers[frame] = (method, handler)
            tagged_union: Any = Union[tuple(tagged)]  # noqa: UP007
            decoders.append(msgspec.json.Decoder(tagged_union, **hooks).decode)
            unions.append((msgspec.json.Decoder(list[tagged_union], **hooks).decode, False))
        self.decode_arrays = tuple(arrays + unions)
        """Array decoders for a ``LineBlock``'s lines joined by commas (``RpcCore._decode_block``), tried in turn,
        each with whether what it decodes is all of one method: first one per method (a block of one method,
        the usual case), then one per decoder group of several methods (a block that mixes them)."""
        self.uniform = len(arrays) == 1
        """One typed method: every frame decoded here is of it (no grouping by method)."""
        self.decode: Callable[[bytes], Any] | None
        if not decoders:
            self.decode = None
        elif len(decoders) == 1:
            self.decode = decoders[0]
        else:
            self.decode = _first_of(decoders)


def _frame(method: str, params: Any, *, tagged: bool) -> type:
    """``{"jsonrpc": "2.0", "method": method, "params": params}`` with unknown fields forbidden: ``method`` a
    required ``Literal`` field (a method's own frame), or the tag (for a union of several methods' frames).
    ``gc=False``: a frame holds only decoded JSON; untracked, a block of them costs the collector nothing."""
    jsonrpc: tuple[str, Any] = ("jsonrpc", Literal["2.0"])
    if tagged:
        fields = [jsonrpc, ("params", params)]
        return msgspec.defstruct(
            "NotificationFrame", fields, tag_field="method", tag=method, forbid_unknown_fields=True, gc=False
        )
    fields = [jsonrpc, ("method", Literal[method]), ("params", params)]
    return msgspec.defstruct("NotificationFrame", fields, forbid_unknown_fields=True, gc=False)


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
