"""``--attach PATH``: a file sent with the prompt in the form the agent's prompt capabilities allow.

An image goes as an image block and audio as an audio block when the agent takes them (``image`` / ``audio``);
otherwise, and for every other file, the file goes embedded (a text or base64 resource) when the agent takes
embedded context; else, and for a file over ``EMBED_LIMIT``, as a link to it (``file://``), which every agent
must accept.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any

import msgspec

from acp_session.conversation.prompt_content import audio, embedded_file, image, resource_link
from acp_session.schema import ContentBlock, PromptCapabilities

__all__ = ["EMBED_LIMIT", "attachment", "check_attachment"]

EMBED_LIMIT = 20 * 1024 * 1024
"""Bigger files go as links: the whole prompt is one JSON-RPC message."""


def _offered(value: Any) -> bool:
    return value is not None and value is not msgspec.UNSET


def check_attachment(path: str) -> str | None:
    """Why ``path`` cannot be attached (a usage error), or None."""
    file = Path(path)
    if not file.exists():
        return f"--attach {path}: no such file"
    if not file.is_file():
        return f"--attach {path}: not a regular file"
    try:
        with file.open("rb"):
            pass
    except OSError as exc:
        return f"--attach {path}: {exc.strerror or exc}"
    return None


def attachment(path: str | Path, capabilities: PromptCapabilities | None) -> tuple[ContentBlock, str]:
    """The block for ``path`` and how it was sent (``"image"``, ``"audio"``, ``"embedded file"``, ``"link"``)."""
    file = Path(path).resolve()
    mime = mimetypes.guess_type(file.name)[0] or ""
    caps = capabilities if capabilities is not None else PromptCapabilities()
    small = file.stat().st_size <= EMBED_LIMIT
    if small and mime.startswith("image/") and _offered(caps.image):
        return image(file, mime), "image"
    if small and mime.startswith("audio/") and _offered(caps.audio):
        return audio(file, mime), "audio"
    if small and _offered(caps.embedded_context):
        return embedded_file(file, mime or None), "embedded file"
    return resource_link(file.as_uri(), file.name, mime=mime or None), "link"
