"""Byte and message transports, newline framing, and the I/O backend seam; nothing here knows JSON-RPC."""

from importlib import import_module
from typing import TYPE_CHECKING, Any

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

# Each export's module, imported on first use. The helper the other facades use (acp_session/_lazy.py) is not
# imported here: the transport layer imports nothing of the package outside it (tests/transport/test_backend.py).
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
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}


if not TYPE_CHECKING:  # for type checkers, the imports above are the exports

    def __getattr__(name: str) -> Any:
        """An export, imported from its module on first use and then bound here; or a submodule."""
        module = _WHERE.get(name)
        if module is not None:
            value = getattr(import_module(module, __name__), name)
            globals()[name] = value
            return value
        if not name.startswith("__"):
            try:
                return import_module(f"{__name__}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{__name__}.{name}":
                    raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})


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
