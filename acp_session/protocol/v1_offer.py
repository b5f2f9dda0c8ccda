"""What ``initialize`` offers a version 1 agent, as plain JSON built without the v1 types.

The v2 offer carries v2's fields only (``negotiate``); this one goes to an agent that answers 1 or refuses the v2
offer, and ``ClientBuilder`` builds it too. Plain JSON keeps the v1 schema types (and the v1 adapter's routing
table) out of every v2 session: the adapter is imported only when an agent answers 1 (``negotiate.adapter_for``).

``V1_ADVERTISED`` repeats the ``advertises`` / ``when`` pairs of ``V1Protocol.routes``, and
``V1_CAPABILITY_FIELDS`` / ``V1_IMPLEMENTATION_FIELDS`` the wire fields of the v1 types;
tests/protocol/test_negotiation.py checks both against the v1 adapter and schema, and that the offer converts to
``v1.InitializeRequest`` and back unchanged.
"""

from __future__ import annotations

from typing import Any

from ..codec import to_builtins
from ..schema.types import ClientCapabilities, Implementation
from .routes import ClientOffer, Condition

__all__ = ["V1_ADVERTISED", "V1_CAPABILITY_FIELDS", "V1_IMPLEMENTATION_FIELDS", "v1_initialize_params"]

V1_ADVERTISED: tuple[tuple[str, Condition], ...] = (
    ("fs.readTextFile", "read_files"),
    ("fs.writeTextFile", "write_files"),
    ("terminal", "terminals"),
)
"""The v1 client capabilities that are true exactly when their route is registered: (dotted path, condition)."""
V1_CAPABILITY_FIELDS = frozenset({"fs", "terminal", "session", "auth", "elicitation", "_meta"})
"""The wire fields of v1 ``ClientCapabilities``: v2 capabilities v1 does not have are not offered to it."""
V1_IMPLEMENTATION_FIELDS = frozenset({"name", "version", "title", "_meta"})
"""The wire fields of v1 ``Implementation`` (``clientInfo``)."""


def v1_initialize_params(capabilities: ClientCapabilities, info: Implementation, offer: ClientOffer) -> dict[str, Any]:
    """The v1 ``initialize`` params: the same identity and capabilities as the v2 offer, plus ``fs`` and
    ``terminal`` exactly when the v1 adapter registers their methods (``fs`` an empty object without a
    file-system provider, as v1 clients commonly send)."""
    plain: dict[str, Any] = to_builtins(capabilities)
    auth = plain.get("auth")
    if isinstance(auth, dict) and auth.get("terminal") is not None:
        plain["auth"] = {"terminal": True}  # v1: a flag, v2: an object
    for path, condition in V1_ADVERTISED:
        *groups, leaf = path.split(".")
        node = plain
        for group in groups:
            node = node.setdefault(group, {})
        node[leaf] = bool(getattr(offer, condition))
    if not offer.file_system:
        plain["fs"] = {}
    fields = V1_CAPABILITY_FIELDS
    if offer.subagents:  # v1's unstable opt-in, only when the application asked for it
        plain["subagents"] = {}
        fields = fields | {"subagents"}
    client_info = {key: value for key, value in to_builtins(info).items() if key in V1_IMPLEMENTATION_FIELDS}
    return {
        "protocolVersion": 1,
        "clientCapabilities": {key: value for key, value in plain.items() if key in fields},
        "clientInfo": client_info,
    }
