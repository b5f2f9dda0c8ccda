"""The timeline's items while a transcript is read (``session_data``), by number, at most ``LIVE_ITEMS`` of them
in memory: the ones touched least recently are encoded to a temporary file and read back if touched again.

A transcript of a million updates may make hundreds of thousands of items (tool calls, usage, plans), each a
dict several times the size of its line; with this the page's memory is the transcript's text plus a bounded
number of items, whatever the mix. Text that grows by many chunks is kept as a ``Text`` (pieces joined in
blocks), never by repeated concatenation, which copies the whole text for every chunk.
"""

from __future__ import annotations

import os
import tempfile
from array import array
from collections.abc import Iterator
from typing import IO, Any

import msgspec

__all__ = ["LIVE_ITEMS", "Item", "ItemStore", "Text"]

LIVE_ITEMS = 65_536
"""How many items stay in memory; older ones go to the temporary file (a fifth of them at a time)."""

Item = dict[str, Any]


class Text:
    """A text built by appending: pieces joined into a block every ``BLOCK`` appends, blocks joined at the end."""

    BLOCK = 1024
    __slots__ = ("_blocks", "_pieces")

    def __init__(self, start: str = "") -> None:
        self._blocks: list[str] = [start] if start else []
        self._pieces: list[str] = []

    def add(self, text: str) -> None:
        self._pieces.append(text)
        if len(self._pieces) >= self.BLOCK:
            self._blocks.append("".join(self._pieces))
            self._pieces = []

    def __str__(self) -> str:
        return "".join(self._blocks) + "".join(self._pieces)


def append_text(item: Item, key: str, text: str) -> None:
    """``item[key] += text``, in time linear in the text however many chunks it arrives in."""
    value = item.get(key)
    if not isinstance(value, Text):
        value = item[key] = Text(value if isinstance(value, str) else "")
    value.add(text)


def _plain(value: Any) -> Any:
    """``msgspec``'s hook for what JSON does not know: a ``Text`` is its text, an array of indices a list."""
    if isinstance(value, Text):
        return str(value)
    if isinstance(value, array):
        return value.tolist()
    raise TypeError(f"cannot encode {type(value).__name__}")


_encoder = msgspec.json.Encoder(enc_hook=_plain)


class ItemStore:
    """Items by number (``add`` gives it), each read or changed through ``get``; ``spill_dir`` holds the
    temporary file (removed when closed, or at once where the system allows)."""

    def __init__(self, spill_dir: str | os.PathLike[str] | None = None, live: int = LIVE_ITEMS) -> None:
        self._spill_dir = spill_dir
        self._limit = max(live, 1)
        self._live: dict[int, Item] = {}  # least recently used first
        self._offsets = array("q")  # per item: where its JSON is in the file, -1 while in memory
        self._lengths = array("q")
        self._file: IO[bytes] | None = None
        self._end = 0

    def __len__(self) -> int:
        return len(self._offsets)

    def add(self, item: Item) -> int:
        number = len(self._offsets)
        self._offsets.append(-1)
        self._lengths.append(0)
        self._live[number] = item
        self._trim()
        return number

    def get(self, number: int) -> Item:
        item = self._live.pop(number, None)
        if item is None:
            item = self._read(number)
            self._offsets[number] = -1
        self._live[number] = item  # now the most recently used
        self._trim()
        return item

    def _read(self, number: int) -> Item:
        assert self._file is not None
        data = os.pread(self._file.fileno(), self._lengths[number], self._offsets[number])
        item: Item = msgspec.json.decode(data)
        return item

    def _trim(self) -> None:
        if len(self._live) <= self._limit:
            return
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="acp-session-view-", dir=self._spill_dir)  # noqa: SIM115
        count = len(self._live) - self._limit + self._limit // 5
        oldest = [number for number, _ in zip(self._live, range(count), strict=False)]
        chunks = []
        for number in oldest:
            data = _encoder.encode(self._live.pop(number))
            self._offsets[number] = self._end
            self._lengths[number] = len(data)
            self._end += len(data)
            chunks.append(data)
        self._file.seek(0, os.SEEK_END)
        self._file.write(b"".join(chunks))
        self._file.flush()

    def items(self) -> Iterator[Item]:
        """Every item in the order they were added (each read back from the file if it is there)."""
        for number in range(len(self._offsets)):
            item = self._live.get(number)
            yield item if item is not None else self._read(number)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def encode(item: Item) -> bytes:
    """An item as JSON (``Text`` and index arrays included)."""
    return _encoder.encode(item)
