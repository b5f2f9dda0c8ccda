"""ACP protocol version 1 behind the model: the adapter, its conversions and its per-session state."""

from .adapter import V1Protocol

__all__ = ["V1Protocol"]
