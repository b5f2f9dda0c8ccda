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

__all__ = ["embed_json", "render_page"]

_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def embed_json(data: Any) -> str:
    """``data`` as JSON that is safe inside a ``<script>`` element (no ``</script>``, no ``<!--``)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return "".join(_ESCAPES.get(char, char) for char in text)


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def render_page(title: str, data: Any, *, style: str, script: str) -> str:
    """The page: ``script`` reads the data with ``JSON.parse(document.getElementById("data").textContent)``."""
    policy = (
        f"default-src 'none'; script-src {_sha256(script)}; style-src {_sha256(style)}; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{escape(title)}</title>\n<style>{style}</style>\n</head>\n<body>\n"
        f'<script type="application/json" id="data">{embed_json(data)}</script>\n'
        f"<script>{script}</script>\n</body>\n</html>\n"
    )
