"""Byte and message transports, newline framing, and the I/O backend seam; nothing here knows JSON-RPC."""

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
