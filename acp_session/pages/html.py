"""One self-contained HTML page: inline style and script (allowed by their hashes in a strict
Content-Security-Policy, nothing else), the data as JSON in a ``<script type="application/json">`` that never
runs. Nothing is fetched, so the page works from ``file://``.

Untrusted text (an agent's replies, file names, tool titles) only ever travels in that JSON, with ``<``, ``>``,
``&`` and U+2028/U+2029 escaped, so it cannot end the script element; the page's script puts it into the DOM with
``textContent`` only, so it is never parsed as markup.
"""

from __future__ import annotations

import base64
import hashlib
import json
from html import escape
from typing import Any

__all__ = ["embed_json", "embed_json_bytes", "page_parts", "render_page"]

_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_TABLE = str.maketrans(_ESCAPES)
_BYTE_ESCAPES = tuple((char.encode(), escaped.encode()) for char, escaped in _ESCAPES.items())


def embed_json(data: Any) -> str:
    """``data`` as JSON that is safe inside a ``<script>`` element (no ``</script>``, no ``<!--``)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).translate(_TABLE)


def embed_json_bytes(text: bytes) -> bytes:
    """JSON text already encoded (UTF-8), made safe the same way: those characters can only stand in its strings,
    where their ``\\u`` escapes mean the same."""
    for char, escaped in _BYTE_ESCAPES:
        if char in text:
            text = text.replace(char, escaped)
    return text


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def page_parts(title: str, *, style: str, script: str) -> tuple[str, str]:
    """The page before and after its data (``embed_json``), for writing the data in pieces."""
    policy = (
        f"default-src 'none'; script-src {_sha256(script)}; style-src {_sha256(style)}; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{escape(title)}</title>\n<style>{style}</style>\n</head>\n<body>\n"
        '<script type="application/json" id="data">'
    )
    return head, f"</script>\n<script>{script}</script>\n</body>\n</html>\n"


def render_page(title: str, data: Any, *, style: str, script: str) -> str:
    """The page: ``script`` reads the data with ``JSON.parse(document.getElementById("data").textContent)``."""
    head, tail = page_parts(title, style=style, script=script)
    return head + embed_json(data) + tail
