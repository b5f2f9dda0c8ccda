"""Small readers for content blocks and diffs, shared by the entities and the chat layer.

They only read: the fold stores wire values untouched, so unknown block types and optional
fields stay exactly as received.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from acp_session.schema import Diff, DiffPatch, TextContent

__all__ = [
    "MESSAGE_SEPARATOR",
    "copy_set_fields",
    "diff_patch_text",
    "diff_paths",
    "join_messages",
    "meta_patched",
    "text_of",
]

MESSAGE_SEPARATOR = "\n\n"
"""What ``join_messages`` puts between two messages' texts when neither has whitespace at the seam."""


def text_of(blocks: Iterable[Any]) -> str:
    """Concatenate the text of the text blocks; other block kinds contribute nothing."""
    return "".join([block.text for block in blocks if type(block) is TextContent])


def join_messages(texts: Iterable[str]) -> str:
    """The texts of separate messages as one text: a blank line between two messages, unless the first
    already ends with whitespace or the second starts with it (an agent that splits one reply into
    several messages usually puts the space in itself). Empty texts are skipped."""
    out: list[str] = []
    for text in texts:
        if not text:
            continue
        if out and not out[-1][-1:].isspace() and not text[:1].isspace():
            out.append(MESSAGE_SEPARATOR)
        out.append(text)
    return "".join(out)


def diff_paths(diff: Diff) -> list[str]:
    """Affected absolute paths from the structured ``changes`` (authoritative; no patch parsing).

    Moves and copies contribute both their old and new path. Unknown change kinds contribute
    the ``path`` they carry, if any.
    """
    paths: list[str] = []
    for change in diff.changes:
        if isinstance(change, dict):
            path = change.get("path")
            if isinstance(path, str):
                paths.append(path)
            continue
        old = getattr(change, "old_path", None)
        if isinstance(old, str):
            paths.append(old)
        paths.append(change.path)
    return paths


def diff_patch_text(diff: Diff) -> str | None:
    """Renderable patch text, or None when the agent sent none (omitted and null mean the same)."""
    patch = diff.patch
    if isinstance(patch, DiffPatch) and isinstance(patch.text, str):
        return patch.text
    return None


def copy_set_fields(update: Any, target: Any, names: tuple[str, ...]) -> None:
    """Patch semantics for plain fields: omitted keeps the old value, ``null`` or a value replaces it."""
    for name in names:
        value = getattr(update, name)
        if value is not msgspec.UNSET:
            setattr(target, name, value)


def meta_patched(stored: dict[str, Any] | None, patch: Any) -> dict[str, Any] | None:
    """Apply a ``_meta`` patch: omitted keeps, null clears, an object patches by top-level key.

    A key set to null is removed; any other value replaces the key as a whole (no deep merge).
    Returns a new dict so values handed out earlier are never mutated behind the caller's back.
    """
    if patch is None:
        return None
    if not isinstance(patch, dict):  # UNSET: leave the stored metadata alone
        return stored
    result = dict(stored) if stored else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result
