"""The ACP agent registry: start agents by id (``codex-acp``, ``claude-acp``, ...) instead of a command line.

``load_registry`` reads a registry (the official one through a daily cache, a file, a URL, or the snapshot
bundled with the package), ``find_agent`` looks an id or alias up, and ``resolve_command`` /
``resolve_agent`` turn it into an ``AgentCommand`` for this platform, installing a binary distribution into
the per-user cache first. See docs/registry.md.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .errors import (
        ChecksumMismatch,
        DownloadFailed,
        DownloadTimedOut,
        DownloadTooLarge,
        InstallBusy,
        InvalidEntry,
        InvalidRegistry,
        LauncherMissing,
        NoDistribution,
        OutsideCache,
        RegistryError,
        RegistryOffline,
        UnknownAgent,
        UnsafeArchive,
    )
    from .install import Progress, install_binary, installed_folder, remove_partial_installs
    from .limits import DEFAULT_REGISTRY_LIMITS, RegistryLimits
    from .model import PLATFORMS, BinaryTarget, Distribution, PackageDistribution, Preview, Registry, RegistryAgent
    from .resolve import (
        ALIASES,
        AgentCommand,
        current_platform,
        find_agent,
        named_agent,
        pinned_command,
        resolve_agent,
        resolve_command,
        sanitize_env,
    )
    from .source import DEFAULT_REGISTRY_URL, REGISTRY_ENV, bundled_registry, cache_dir, load_registry

# Each export's module, imported on first use (acp_session/_lazy.py).
_EXPORTS = {
    ".errors": (
        "ChecksumMismatch",
        "DownloadFailed",
        "DownloadTimedOut",
        "DownloadTooLarge",
        "InstallBusy",
        "InvalidEntry",
        "InvalidRegistry",
        "LauncherMissing",
        "NoDistribution",
        "OutsideCache",
        "RegistryError",
        "RegistryOffline",
        "UnknownAgent",
        "UnsafeArchive",
    ),
    ".install": ("Progress", "install_binary", "installed_folder", "remove_partial_installs"),
    ".limits": ("DEFAULT_REGISTRY_LIMITS", "RegistryLimits"),
    ".model": (
        "PLATFORMS",
        "BinaryTarget",
        "Distribution",
        "PackageDistribution",
        "Preview",
        "Registry",
        "RegistryAgent",
    ),
    ".resolve": (
        "ALIASES",
        "AgentCommand",
        "current_platform",
        "find_agent",
        "named_agent",
        "pinned_command",
        "resolve_agent",
        "resolve_command",
        "sanitize_env",
    ),
    ".source": ("DEFAULT_REGISTRY_URL", "REGISTRY_ENV", "bundled_registry", "cache_dir", "load_registry"),
}
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "ALIASES",
    "DEFAULT_REGISTRY_LIMITS",
    "DEFAULT_REGISTRY_URL",
    "PLATFORMS",
    "REGISTRY_ENV",
    "AgentCommand",
    "BinaryTarget",
    "ChecksumMismatch",
    "Distribution",
    "DownloadFailed",
    "DownloadTimedOut",
    "DownloadTooLarge",
    "InstallBusy",
    "InvalidEntry",
    "InvalidRegistry",
    "LauncherMissing",
    "NoDistribution",
    "OutsideCache",
    "PackageDistribution",
    "Preview",
    "Progress",
    "Registry",
    "RegistryAgent",
    "RegistryError",
    "RegistryLimits",
    "RegistryOffline",
    "UnknownAgent",
    "UnsafeArchive",
    "bundled_registry",
    "cache_dir",
    "current_platform",
    "find_agent",
    "install_binary",
    "installed_folder",
    "load_registry",
    "named_agent",
    "pinned_command",
    "remove_partial_installs",
    "resolve_agent",
    "resolve_command",
    "sanitize_env",
]
