"""Test-side raw peer: read and write JSON lines on one end of a transport, with no rpc layer."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

from acp_session.transport import FrameReader, Transport

HELPERS = Path(__file__).parent
PYTHON = sys.executable


class RawEnd:
    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self._reader = FrameReader()
        self._frames: list[bytes] = []

    async def send(self, message: Any) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        await self.transport.send(data if data.endswith(b"\n") else data + b"\n")

    async def recv_frame(self, timeout: float = 2.0) -> bytes:
        with anyio.fail_after(timeout):
            while not self._frames:
                for frame in self._reader.feed(await self.transport.receive()):
                    assert isinstance(frame, bytes)
                    self._frames.append(frame)
        return self._frames.pop(0)

    async def recv(self, timeout: float = 2.0) -> Any:
        return json.loads(await self.recv_frame(timeout))

    async def expect_silence(self, seconds: float = 0.1) -> None:
        with anyio.move_on_after(seconds):
            frame = await self.recv_frame(seconds + 1)
            raise AssertionError(f"expected nothing, got {frame!r}")


def helper(name: str) -> list[str]:
    return [PYTHON, str(HELPERS / name)]
