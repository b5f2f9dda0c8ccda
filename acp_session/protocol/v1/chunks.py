"""Decoding v1 ``session/update`` so that chunks carry the model's content blocks straight away.

The five content block types have the same shape in v1 and v2, so a v1 chunk's ``content`` can be decoded
directly into the model's (v2) block types. The chunk types here are derived from the generated v1 ones
(same fields, same tags) with only ``content`` retyped; a frame that is not one of these chunks (any other
update, or anything these types reject) is decoded by the generated v1 types as usual. That saves building
each streamed block twice, the largest part of the v1 adapter's cost per chunk.
"""

from __future__ import annotations

from typing import Any, Union

import msgspec

from ..._schema_runtime import AcpStruct
from ...codec import decoder
from ...schema import types as m
from ...schema.v1 import types as v1

__all__ = ["MODEL_CONTENT_CHUNKS", "decode_notification"]


def _retyped(cls: type[msgspec.Struct]) -> type[msgspec.Struct]:
    fields: list[Any] = []
    for info in msgspec.structs.fields(cls):
        tp = m.ContentBlock if info.name == "content" else info.type
        if info.required:
            fields.append((info.name, tp))
        else:
            fields.append((info.name, tp, msgspec.field(default=info.default, name=info.encode_name)))
    config = cls.__struct_config__
    return msgspec.defstruct(
        cls.__name__,
        fields,
        bases=(AcpStruct,),
        tag_field=config.tag_field,
        tag=config.tag,
        module=__name__,
    )


MODEL_CONTENT_CHUNKS: dict[type, type] = {
    _retyped(v1.AgentMessageChunk): v1.AgentMessageChunk,
    _retyped(v1.AgentThoughtChunk): v1.AgentThoughtChunk,
    _retyped(v1.UserMessageChunk): v1.UserMessageChunk,
}
"""Derived chunk type (``content`` is a model block) -> the generated v1 chunk type it stands for."""

_ChunkUpdate = Union[tuple(MODEL_CONTENT_CHUNKS)]  # type: ignore[valid-type]  # noqa: UP007

ChunkNotification = msgspec.defstruct(
    "ChunkNotification", [("update", _ChunkUpdate)], bases=(m.UpdateSessionNotification,), module=__name__
)
"""A model ``UpdateSessionNotification`` (a subclass) whose ``update`` is decoded as a derived v1 chunk; the
adapter then replaces ``update`` with the model chunk, so the notification object itself is passed on."""

_FAST = msgspec.json.Decoder(ChunkNotification)
_FULL = decoder(v1.SessionNotification)


def decode_notification(data: bytes | memoryview) -> Any:
    """A v1 ``session/update``'s params: a ``ChunkNotification`` for a chunk, else a ``v1.SessionNotification``."""
    try:
        return _FAST.decode(data)
    except msgspec.ValidationError:
        return _FULL(data)


# Published like ``codec.decoder``'s: the rpc layer decodes whole chunk frames with it in one pass.
setattr(decode_notification, "msgspec_decoder", _FAST)  # noqa: B010
