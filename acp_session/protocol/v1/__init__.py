"""ACP protocol version 1 behind the model: the adapter, its conversions and its per-session state."""

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

if TYPE_CHECKING:
    from .adapter import V1Protocol

# Each export's module, imported on first use (acp_session/_lazy.py).
_EXPORTS = {
    ".adapter": ("V1Protocol",),
}
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["V1Protocol"]
