"""Recording a transport: every JSON-RPC line in both directions appended to a file, in the transcript format.

Each line of the file is ``{"t": <unix seconds>, "dir": "in" | "out", "msg": <the message>}``; a line that is not
JSON is kept as ``"raw": "<text>"`` instead of ``msg``. ``ClientBuilder.record_transcript(path)`` wraps the agent's
transport in one; ``acp_session.transcript`` reads the file back (``read_transcript``, ``load_transcript``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import IO, Literal, TypeAlias

import anyio
import msgspec

from .base import DEFAULT_RECEIVE_SIZE, FrameTransport, PeerExit, Transport
from .framing import Frame, expand_blocks

__all__ = ["Direction", "RecordingFrames", "RecordingTransport", "TranscriptTarget"]

Direction = Literal["in", "out"]

TranscriptTarget: TypeAlias = str | os.PathLike[str] | IO[bytes]
"""Where a transcript goes: a path (opened for appending, closed with the transport), or a binary file the caller
opened (written and flushed, never closed: it stays the caller's, e.g. to refuse symbolic links when opening)."""


class RecordingTransport:
    """A ``Transport`` that passes bytes through unchanged and appends each complete line to a file."""

    def __init__(self, inner: Transport, path: TranscriptTarget) -> None:
        self.inner = inner
        self.path: Path | None = None  # None: the caller's own file
        self._file: IO[bytes] | None
        if isinstance(path, (str, os.PathLike)):
            self.path = Path(path)
            self._file = self.path.open("ab")
        else:
            self._file = path
        self._owned = self.path is not None
        self._partial = {"in": b"", "out": b""}

    def _record(self, direction: Direction, data: bytes) -> None:
        file = self._file
        if file is None:
            return
        lines = (self._partial[direction] + data).split(b"\n")
        self._partial[direction] = lines.pop()
        prefix = b'{"t":%.6f,"dir":"%s",' % (time.time(), direction.encode())
        for line in lines:
            line = line.rstrip(b"\r")
            if not line.strip():
                continue
            try:
                msgspec.json.decode(line)
            except msgspec.DecodeError:
                file.write(prefix + b'"raw":' + msgspec.json.encode(line.decode("utf-8", "replace")) + b"}\n")
            else:
                file.write(prefix + b'"msg":' + line + b"}\n")
        file.flush()

    async def receive(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes:
        data = await self.inner.receive(max_bytes)
        self._record("in", data)
        return data

    async def send(self, item: bytes) -> None:
        self._record("out", bytes(item))
        await self.inner.send(item)

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            if self._file is not None and self._owned:
                self._file.close()
            self._file = None

    async def peer_exit(self) -> PeerExit:
        return await self.inner.peer_exit()


class RecordingFrames:
    """A ``FrameTransport`` that passes frames through unchanged and appends each one to a file (a remote
    transport's messages: the same transcript lines as ``RecordingTransport``; headers are never recorded)."""

    def __init__(self, inner: FrameTransport, path: TranscriptTarget) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", None)
        self._lines = RecordingTransport(_NoStream(), path)

    async def receive_frames(self) -> list[Frame]:
        frames = await self.inner.receive_frames()
        lines = (frame + b"\n" for frame in expand_blocks(frames) if isinstance(frame, bytes))
        self._lines._record("in", b"".join(lines))
        return frames

    async def send_frames(self, frames: list[bytes]) -> None:
        self._lines._record("out", b"".join(frame + b"\n" for frame in frames))
        await self.inner.send_frames(frames)

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            await self._lines.aclose()

    async def peer_exit(self) -> PeerExit:
        return await self.inner.peer_exit()

    def follow_session(self, session_id: str) -> None:
        """``SessionStreams``, passed on when the inner transport has it."""
        follow = getattr(self.inner, "follow_session", None)
        if follow is not None:
            follow(session_id)

    def unfollow_session(self, session_id: str) -> None:
        unfollow = getattr(self.inner, "unfollow_session", None)
        if unfollow is not None:
            unfollow(session_id)


class _NoStream:
    """The byte stream behind ``RecordingFrames``' line recorder: never read or written, closing does nothing."""

    async def receive(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes:
        raise anyio.EndOfStream

    async def send(self, item: bytes) -> None:
        raise anyio.BrokenResourceError

    async def aclose(self) -> None:
        return None

    async def peer_exit(self) -> PeerExit:
        return PeerExit()
