"""Byte transports and newline framing; nothing here knows about JSON-RPC methods."""

from .base import DEFAULT_RECEIVE_SIZE, PeerExit, StreamTransport, Transport
from .framing import DEFAULT_MAX_FRAME_SIZE, FrameReader, OversizedFrame, encode_frame
from .memory import MemoryTransport, memory_pair
from .sockets import tcp, unix_socket
from .stdio import StdioServerTransport, stdio_server
from .subprocess import AgentProcess, stdio_agent

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "DEFAULT_RECEIVE_SIZE",
    "AgentProcess",
    "FrameReader",
    "MemoryTransport",
    "OversizedFrame",
    "PeerExit",
    "StdioServerTransport",
    "StreamTransport",
    "Transport",
    "encode_frame",
    "memory_pair",
    "stdio_agent",
    "stdio_server",
    "tcp",
    "unix_socket",
]
