"""The registry's documents as typed values: ``registry.json`` and each agent's ``agent.json``.

The shapes follow the registry's ``FORMAT.md`` and ``agent.schema.json``. Unknown fields are ignored (the
registry adds optional ones over time), so a newer registry still decodes.
"""

from __future__ import annotations

import msgspec

__all__ = [
    "PLATFORMS",
    "BinaryTarget",
    "Distribution",
    "PackageDistribution",
    "Preview",
    "Registry",
    "RegistryAgent",
    "SnapshotInfo",
]

PLATFORMS = (
    "darwin-aarch64",
    "darwin-x86_64",
    "linux-aarch64",
    "linux-x86_64",
    "windows-aarch64",
    "windows-x86_64",
)
"""The ``<os>-<arch>`` keys a binary distribution may have."""


class PackageDistribution(msgspec.Struct, frozen=True):
    """An ``npx`` or ``uvx`` entry: ``package`` (with its version), optional ``cmd``, ``args`` and ``env``."""

    package: str
    args: list[str] = []
    env: dict[str, str] = {}
    cmd: str | None = None


class BinaryTarget(msgspec.Struct, frozen=True):
    """One platform's archive: where to download it, what to run inside it, and its sha256 when known.
    ``size`` (bytes, an acp-session extension a private registry may set) caps the download instead of
    ``RegistryLimits.download_bytes``."""

    archive: str
    cmd: str
    args: list[str] = []
    env: dict[str, str] = {}
    sha256: str | None = None
    size: int | None = None


class Distribution(msgspec.Struct, frozen=True):
    binary: dict[str, BinaryTarget] = {}
    npx: PackageDistribution | None = None
    uvx: PackageDistribution | None = None

    @property
    def kinds(self) -> tuple[str, ...]:
        """The distribution kinds present, in the order they are preferred (see ``resolve``)."""
        present = {"binary": bool(self.binary), "npx": self.npx is not None, "uvx": self.uvx is not None}
        return tuple(kind for kind, here in present.items() if here)


class Preview(msgspec.Struct, frozen=True):
    """The pre-release channel of an agent: its own version and distribution."""

    version: str
    distribution: Distribution


class RegistryAgent(msgspec.Struct, frozen=True):
    """One ``agent.json``: the stable channel at top level, the preview channel in ``preview``."""

    id: str
    name: str
    version: str
    description: str
    distribution: Distribution
    repository: str | None = None
    website: str | None = None
    authors: list[str] = []
    license: str | None = None
    icon: str | None = None
    preview: Preview | None = None


class SnapshotInfo(msgspec.Struct, frozen=True, rename="camel"):
    """What the bundled snapshot says about itself (its ``_snapshot`` member; absent from a live registry)."""

    date: str
    source: str = ""
    auth_methods: dict[str, list[str]] = {}
    auth_source: str = ""


class Registry(msgspec.Struct, frozen=True):
    """A ``registry.json``: its format version and the agents, plus where it was read from (``origin``)."""

    version: str
    agents: list[RegistryAgent]
    snapshot: SnapshotInfo | None = msgspec.field(default=None, name="_snapshot")
    origin: str = ""
