"""How much a registry, a download or an archive may cost at most, whatever the server or the entry says.

A hostile or broken registry must not fill the disk, hang the caller or exhaust memory: every fetch and
download has a deadline over the whole transfer (a server sending a byte a second is cut off), every download
a size cap checked before each write, and every archive caps on its members and their extracted bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_REGISTRY_LIMITS", "RegistryLimits"]

MIB = 1024 * 1024


@dataclass(frozen=True)
class RegistryLimits:
    """The registry's bounds (docs/registry.md, "Limits"); pass one to ``install_binary``, ``resolve_agent``,
    ``resolve_command``, ``pinned_command``, ``named_agent`` or ``load_registry`` to change them."""

    download_bytes: int = 1024 * MIB
    """An archive's download cap (1 GiB) when the entry declares no ``size``; a declared ``size`` is the cap
    instead. Refused (``DownloadTooLarge``) before a byte past it is written, with or without Content-Length."""
    extracted_bytes: int = 4096 * MIB
    """The bytes an archive's files may hold once extracted (4 GiB), counted from its headers before anything
    is written and again while writing (``UnsafeArchive``)."""
    members: int = 200_000
    """The entries an archive may have (files, folders, links); more is ``UnsafeArchive``."""
    download_deadline: float = 600.0
    """Seconds a whole download may take, connection included (``DownloadTimedOut``)."""
    stall_timeout: float = 30.0
    """Seconds to wait for any one read (or the connection) of a download before giving up."""
    registry_bytes: int = 16 * MIB
    """The largest ``registry.json`` read from a URL."""
    registry_deadline: float = 10.0
    """Seconds a whole registry fetch may take (then the cached copy or the bundled snapshot is used)."""
    registry_timeout: float = 5.0
    """Seconds to wait for any one read (or the connection) of a registry fetch."""
    install_wait: float = 900.0
    """Seconds to wait for another process installing the same agent to finish (``InstallBusy``)."""

    def __post_init__(self) -> None:
        for name in ("download_bytes", "extracted_bytes", "members", "registry_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"RegistryLimits.{name} must be at least 1")
        for name in ("download_deadline", "stall_timeout", "registry_deadline", "registry_timeout", "install_wait"):
            if not getattr(self, name) > 0:
                raise ValueError(f"RegistryLimits.{name} must be positive")


DEFAULT_REGISTRY_LIMITS = RegistryLimits()
