"""Byte and message transports, newline framing, and the I/O backend seam; nothing here knows JSON-RPC."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .base import (
        DEFAULT_RECEIVE_SIZE,
        FastPathTransport,
        FramedStream,
        FrameTransport,
        PeerExit,
        StreamTransport,
        Transport,
    )
    from .framing import DEFAULT_MAX_FRAME_SIZE, Frame, FrameReader, InvalidUtf8Frame, OversizedFrame, encode_frame
    from .lines import LineFrames, frame_transport
    from .memory import MemoryTransport, memory_pair
    from .process_tree import ProcessTree, reaper_available
    from .sockets import tcp, unix_socket
    from .stdio import StdioServerTransport, stdio_server
    from .subprocess import AgentProcess, stdio_agent

# Each export's module, imported on first use (acp_session/_lazy.py).
_EXPORTS = {
    ".base": (
        "DEFAULT_RECEIVE_SIZE",
        "FastPathTransport",
        "FramedStream",
        "FrameTransport",
        "PeerExit",
        "StreamTransport",
        "Transport",
    ),
    ".framing": (
        "DEFAULT_MAX_FRAME_SIZE",
        "Frame",
        "FrameReader",
        "InvalidUtf8Frame",
        "OversizedFrame",
        "encode_frame",
    ),
    ".lines": ("LineFrames", "frame_transport"),
    ".memory": ("MemoryTransport", "memory_pair"),
    ".process_tree": ("ProcessTree", "reaper_available"),
    ".sockets": ("tcp", "unix_socket"),
    ".stdio": ("StdioServerTransport", "stdio_server"),
    ".subprocess": ("AgentProcess", "stdio_agent"),
}
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "DEFAULT_RECEIVE_SIZE",
    "AgentProcess",
    "FastPathTransport",
    "Frame",
    "FrameReader",
    "FrameTransport",
    "FramedStream",
    "InvalidUtf8Frame",
    "LineFrames",
    "MemoryTransport",
    "OversizedFrame",
    "PeerExit",
    "ProcessTree",
    "StdioServerTransport",
    "StreamTransport",
    "Transport",
    "encode_frame",
    "frame_transport",
    "memory_pair",
    "reaper_available",
    "stdio_agent",
    "stdio_server",
    "tcp",
    "unix_socket",
]
