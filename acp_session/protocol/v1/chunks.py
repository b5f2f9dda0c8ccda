"""Decoding v1 ``session/update`` so that chunks carry the model's content blocks straight away.

The five content block types have the same shape in v1 and v2, and a v1 chunk is a v2 chunk without its
``messageId``. So a v1 chunk is decoded straight into a subtype of the model's chunk type whose ``messageId``
is optional; the adapter assigns the id in place and passes the very object on (the fold treats the subtype
as its model type: ``update_kinds.register_subtype``). A frame that is not one of these chunks (any other update, or
anything these types reject) is decoded by the generated v1 types as usual. Nothing of a streamed chunk is
built twice.
"""

from __future__ import annotations

from typing import Any, Union, cast

import msgspec

from ...codec import TypedDecoder, decoder
from ...schema import types as m
from ...schema.v1 import types as v1
from ...update_kinds import register_subtype

__all__ = ["MODEL_CONTENT_CHUNKS", "decode_notification"]


def _model_subtype(model: type[msgspec.Struct], generated: type[msgspec.Struct]) -> type[msgspec.Struct]:
    """The model chunk type with ``messageId`` optional (empty until the adapter assigns one): a v1 chunk
    decodes into it and the adapter sets the id in place, so each streamed chunk is built once."""
    config = generated.__struct_config__
    subtype = msgspec.defstruct(
        model.__name__,
        [("message_id", str, "")],
        bases=(model,),
        kw_only=True,
        tag=config.tag,
        module=__name__,
    )
    register_subtype(subtype, model)
    return subtype


MODEL_CONTENT_CHUNKS: dict[type, type] = {
    _model_subtype(m.AgentMessageChunk, v1.AgentMessageChunk): v1.AgentMessageChunk,
    _model_subtype(m.AgentThoughtChunk, v1.AgentThoughtChunk): v1.AgentThoughtChunk,
    _model_subtype(m.UserMessageChunk, v1.UserMessageChunk): v1.UserMessageChunk,
}
"""Model chunk subtype (``update_kinds.register_subtype``) -> the generated v1 chunk type it stands for."""

_ChunkUpdate = Union[tuple(MODEL_CONTENT_CHUNKS)]  # type: ignore[valid-type]  # noqa: UP007

ChunkNotification = msgspec.defstruct(
    "ChunkNotification", [("update", _ChunkUpdate)], bases=(m.UpdateSessionNotification,), module=__name__
)
"""A model ``UpdateSessionNotification`` (a subclass) whose ``update`` is a model chunk subtype: once the
adapter has set the chunk's ``message_id`` it is passed on as it is."""

_FAST = msgspec.json.Decoder(ChunkNotification)
_FULL = decoder(v1.SessionNotification)


def decode_notification(data: bytes | memoryview) -> Any:
    """A v1 ``session/update``'s params: a ``ChunkNotification`` for a chunk, else a ``v1.SessionNotification``."""
    try:
        return _FAST.decode(data)
    except msgspec.ValidationError:
        return _FULL(data)


# A ``TypedDecoder``, like ``codec.decoder``'s functions: the rpc layer decodes whole chunk frames with it in one pass.
cast(TypedDecoder, decode_notification).msgspec_decoder = _FAST
