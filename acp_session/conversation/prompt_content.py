"""Builders for prompt content blocks, so callers never hand-write wire dicts.

They only build; whether the agent accepts a block is checked when it is sent
(``ActiveSession.send_prompt_blocks`` / ``Conversation.chat`` raise ``CapabilityNotSupported`` for image,
audio or embedded blocks the agent's prompt capabilities do not allow, ACP2-084).
"""

from __future__ import annotations

import base64
import mimetypes
import os
from pathlib import Path

import msgspec

from acp_session.schema import (
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

__all__ = ["audio", "embedded_file", "image", "resource_link", "text"]

PathOrBytes = str | os.PathLike[str] | bytes


def text(value: str) -> TextContent:
    return TextContent(text=value)


def _media(data: PathOrBytes, mime: str | None, what: str) -> tuple[str, str]:
    if isinstance(data, bytes):
        if mime is None:
            raise ValueError(f"{what} bytes need a mime type")
        raw = data
    else:
        path = Path(data)
        raw = path.read_bytes()
        mime = mime or mimetypes.guess_type(path.name)[0]
        if mime is None:
            raise ValueError(f"cannot guess the mime type of {path.name!r}; pass mime=")
    return base64.b64encode(raw).decode("ascii"), mime


def image(data: PathOrBytes, mime: str | None = None) -> ImageContent:
    """An image from a file (mime type guessed from its name) or raw bytes (mime required)."""
    encoded, mime_type = _media(data, mime, "image")
    return ImageContent(data=encoded, mime_type=mime_type)


def audio(data: PathOrBytes, mime: str | None = None) -> AudioContent:
    encoded, mime_type = _media(data, mime, "audio")
    return AudioContent(data=encoded, mime_type=mime_type)


def resource_link(uri: str, name: str | None = None, *, mime: str | None = None) -> ResourceLink:
    """A link the agent can resolve itself; ``name`` defaults to the last path segment of ``uri``."""
    label = name or uri.rstrip("/").rsplit("/", 1)[-1] or uri
    return ResourceLink(name=label, uri=uri, mime_type=msgspec.UNSET if mime is None else mime)


def embedded_file(path: str | os.PathLike[str], mime: str | None = None) -> EmbeddedResource:
    """The file's contents inline: a text resource when it decodes as UTF-8, else a base64 blob."""
    file = Path(path).resolve()
    raw = file.read_bytes()
    mime = mime or mimetypes.guess_type(file.name)[0]
    mime_type = msgspec.UNSET if mime is None else mime
    uri = file.as_uri()
    try:
        content: TextResourceContents | BlobResourceContents = TextResourceContents(
            text=raw.decode("utf-8"), uri=uri, mime_type=mime_type
        )
    except UnicodeDecodeError:
        content = BlobResourceContents(blob=base64.b64encode(raw).decode("ascii"), uri=uri, mime_type=mime_type)
    return EmbeddedResource(resource=content)
