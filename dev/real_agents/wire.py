"""Compare what the library decoded with the raw JSON the agent sent, field by field.

``wire_diff(raw, decoded)`` walks the raw JSON value and reports every field the decoded value (its plain JSON
form, ``acp_session.codec.to_builtins``) lacks or holds differently. Fields the decoded value adds (defaults)
are not drops and are not reported. ``updates_of(path)`` reads the raw ``session/update`` params a
recorded transcript holds, in order, to pair with the notes the application received.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from acp_session.transcript import read_transcript

__all__ = ["updates_of", "wire_diff"]


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:59] + "…"


def wire_diff(raw: Any, decoded: Any, path: str = "") -> list[str]:
    """Every difference, as ``path: what``: ``missing`` for a dropped field, ``raw X, decoded Y`` for a change."""
    here = path or "$"
    if isinstance(raw, Mapping):
        if not isinstance(decoded, Mapping):
            return [f"{here}: raw object, decoded {_show(decoded)}"]
        out: list[str] = []
        for key, value in raw.items():
            where = f"{path}.{key}" if path else key
            if key not in decoded:
                out.append(f"{where}: missing (raw {_show(value)})")
            else:
                out.extend(wire_diff(value, decoded[key], where))
        return out
    if isinstance(raw, list):
        if not isinstance(decoded, list):
            return [f"{here}: raw list, decoded {_show(decoded)}"]
        if len(raw) != len(decoded):
            return [f"{here}: raw {len(raw)} items, decoded {len(decoded)}"]
        out = []
        for index, (left, right) in enumerate(zip(raw, decoded, strict=True)):
            out.extend(wire_diff(left, right, f"{path}[{index}]"))
        return out
    same = raw == decoded and type(raw) is type(decoded)
    if not same and isinstance(raw, (int, float)) and isinstance(decoded, (int, float)):
        same = not isinstance(raw, bool) and not isinstance(decoded, bool) and raw == decoded
    return [] if same else [f"{here}: raw {_show(raw)}, decoded {_show(decoded)}"]


def updates_of(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The params of every incoming ``session/update`` of a recorded transcript, in wire order."""
    out: list[dict[str, Any]] = []
    for entry in read_transcript(path):
        message = entry.message
        if entry.direction == "in" and isinstance(message, dict) and message.get("method") == "session/update":
            params = message.get("params")
            if isinstance(params, dict):
                out.append(params)
    return out
