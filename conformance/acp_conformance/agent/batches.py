"""JSON-RPC batches on the reference agent's stdio, as the older v2 docs describe them (``transports.mdx``, the text
the official kit's ACP-BATCH-2xx ids cite).

The current v2 schema has no batches, and the library the agent is built on refuses an array as a whole
(``acp_session.rpc.core``). The reference agent takes them anyway, since a receiver that does harms no client:
an empty array gets one ``-32600`` with id null; each entry that is no request or notification gets its own
``-32600`` with id null; notifications and requests run as if sent one by one; the answers to a batch's requests
(and the errors for its bad entries) go back as one array once all are there, in the order they come; a batch of
notifications only gets no reply at all. Broken variants (``--broken batch-...``) break one of those rules each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp_session.transport import Transport

from .linefilter import LineFilter, dumps, loads

__all__ = ["BATCH_MODES", "BatchingTransport"]

BATCH_MODES: dict[str, str] = {
    "batch-empty-array": "answer an empty batch [] with an empty array instead of one -32600 (ACP-BATCH-201)",
    "batch-answer-notifications": "answer a batch of notifications only with -32600 (ACP-BATCH-202)",
    "batch-unwrapped": "answer the requests of a batch one by one, not as one array (ACP-BATCH-204)",
    "batch-drop-invalid": "give a batch's invalid entries no -32600 (ACP-BATCH-203)",
}

_INVALID = {"code": -32600, "message": "Invalid Request"}


def _key(value: Any) -> str:
    return dumps(value).decode()


def _is_request(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("method"), str) and item.get("id") is not None


def _is_notification(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("method"), str) and "id" not in item


@dataclass
class _Batch:
    waiting: set[str]  # the ids of its requests not answered yet
    answers: list[Any] = field(default_factory=list)


class BatchingTransport(LineFilter):
    """The agent's stdio with batches taken apart on the way in and their answers put together on the way out."""

    def __init__(self, inner: Transport, broken: frozenset[str] = frozenset()) -> None:
        super().__init__(inner)
        self.broken = broken
        self._open: list[_Batch] = []

    def passes(self, data: bytes) -> bool:
        return not data.lstrip().startswith(b"[") and b"\n[" not in data

    def idle(self) -> bool:
        return not self._open

    async def incoming(self, line: bytes) -> list[bytes]:
        if not line.lstrip().startswith(b"["):
            return [line]
        items = loads(line)
        if not isinstance(items, list):
            return [line]  # not JSON: the library answers -32700
        if not items:
            await self.reply(
                [] if "batch-empty-array" in self.broken else {"jsonrpc": "2.0", "id": None, "error": _INVALID}
            )
            return []
        passed: list[bytes] = []
        errors: list[Any] = []
        waiting: set[str] = set()
        for item in items:
            if _is_request(item):
                waiting.add(_key(item["id"]))
                passed.append(dumps(item))
            elif _is_notification(item):
                passed.append(dumps(item))
            elif "batch-drop-invalid" not in self.broken:
                errors.append({"jsonrpc": "2.0", "id": None, "error": _INVALID})
        if "batch-unwrapped" in self.broken:
            if errors:
                await self.reply(*errors)
            return passed
        if waiting:
            self._open.append(_Batch(waiting, errors))
        elif errors:
            await self.reply(errors)
        elif "batch-answer-notifications" in self.broken:
            await self.reply({"jsonrpc": "2.0", "id": None, "error": _INVALID})
        return passed

    def outgoing(self, line: bytes) -> list[bytes]:
        if not self._open or b'"id"' not in line:
            return [line]
        message = loads(line)
        if not isinstance(message, dict) or "method" in message or "id" not in message:
            return [line]
        key = _key(message["id"])
        for batch in self._open:
            if key in batch.waiting:
                batch.waiting.discard(key)
                batch.answers.append(message)
                if batch.waiting:
                    return []
                self._open.remove(batch)
                return [dumps(batch.answers)]
        return [line]
