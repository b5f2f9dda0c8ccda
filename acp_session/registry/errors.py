"""Why an agent id could not be turned into a command: one error type per cause, each saying what to do."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import AcpError

__all__ = [
    "ChecksumMismatch",
    "DownloadFailed",
    "DownloadTimedOut",
    "DownloadTooLarge",
    "InstallBusy",
    "InvalidEntry",
    "InvalidRegistry",
    "OutsideCache",
    "LauncherMissing",
    "NoDistribution",
    "RegistryError",
    "RegistryOffline",
    "UnknownAgent",
    "UnsafeArchive",
]


class RegistryError(AcpError):
    """Root of the registry's errors."""


class InvalidRegistry(RegistryError):
    """A registry file or URL that is not a registry (not JSON, or not the registry's shape)."""

    def __init__(self, origin: str, problem: str) -> None:
        self.origin = origin
        self.problem = problem
        super().__init__(f"{origin} is not an ACP agent registry: {problem}")


class InvalidEntry(InvalidRegistry):
    """One entry of the registry is refused before anything is written or run: an ``id`` or ``version`` that
    is not a plain name (it would become a folder), a ``cmd`` or argument path that leaves the install folder,
    an npx/uvx ``package`` that is not a package name. ``agent_id``, ``field`` and ``value`` say which."""

    def __init__(self, agent_id: str, field: str, value: str, problem: str) -> None:
        self.agent_id = agent_id
        self.field = field
        self.value = value
        RegistryError.__init__(self, f"registry entry {agent_id!r}: {field} {value!r} {problem}: refused")
        self.origin = f"registry entry {agent_id!r}"
        self.problem = f"{field} {value!r} {problem}"


class UnknownAgent(RegistryError):
    """No agent has this id (nor is it an alias); ``close_matches`` are the ids it may have meant."""

    def __init__(
        self, agent_id: str, close_matches: Sequence[str], origin: str = "", *, not_a_command: bool = False
    ) -> None:
        self.agent_id = agent_id
        self.close_matches = list(close_matches)
        self.origin = origin
        hint = f"; did you mean {', '.join(self.close_matches)}?" if self.close_matches else ""
        where = f" in {origin}" if origin else ""
        if not_a_command:  # an --agent word: neither a program on PATH nor a registry id
            text = f"agent command not found: {agent_id} (nor is it an agent id{where}{hint})"
        else:
            text = f"no agent {agent_id!r}{where}{hint} (`acp-session agents` lists them)"
        super().__init__(text)


class NoDistribution(RegistryError):
    """The agent has nothing that runs on this platform (or no such channel)."""

    def __init__(self, agent_id: str, platform: str, available: Sequence[str], channel: str = "stable") -> None:
        self.agent_id = agent_id
        self.platform = platform
        self.available = list(available)
        self.channel = channel
        offered = ", ".join(self.available) or "nothing"
        super().__init__(f"{agent_id} ({channel}) has no distribution for {platform} (it offers: {offered})")


_HOW_TO_GET = {
    "npx": "install Node.js, which brings npm and npx (https://nodejs.org)",
    "uvx": "install uv, which brings uvx (https://docs.astral.sh/uv/getting-started/installation/)",
}


class LauncherMissing(RegistryError):
    """The agent is started with ``npx`` or ``uvx`` and that program is not on PATH."""

    def __init__(self, agent_id: str, launcher: str) -> None:
        self.agent_id = agent_id
        self.launcher = launcher
        how = _HOW_TO_GET.get(launcher, f"install {launcher}")
        super().__init__(f"{agent_id} runs with {launcher}, which is not on PATH: {how}")


class ChecksumMismatch(RegistryError):
    """The downloaded archive is not the one the registry names: nothing was extracted or kept."""

    def __init__(self, url: str, expected: str, actual: str) -> None:
        self.url = url
        self.expected = expected
        self.actual = actual
        super().__init__(f"sha256 of {url} is {actual}, the registry says {expected}: refused")


class UnsafeArchive(RegistryError):
    """An archive member would land outside the install folder (``..``, an absolute path, a link out), is a
    device, or the archive exceeds ``RegistryLimits`` (members, bytes once extracted): the whole archive is
    refused and nothing of it is kept. ``member`` is empty when the archive as a whole is refused."""

    def __init__(self, member: str, reason: str) -> None:
        self.member = member
        self.reason = reason
        super().__init__(f"unsafe archive member {member!r}: {reason}" if member else f"unsafe archive: {reason}")


class DownloadFailed(RegistryError):
    """The server answered, but not with the archive (an HTTP error, a truncated body)."""

    def __init__(self, url: str, problem: str) -> None:
        self.url = url
        self.problem = problem
        super().__init__(f"download of {url} failed: {problem}")


class DownloadTooLarge(DownloadFailed):
    """The download would pass its cap (the entry's ``size``, else ``RegistryLimits.download_bytes``): refused
    before a byte past the cap is written."""

    def __init__(self, url: str, limit: int) -> None:
        self.limit = limit
        super().__init__(url, f"larger than its limit of {limit} bytes")


class DownloadTimedOut(DownloadFailed):
    """The whole fetch or download took longer than its deadline (a stalled or trickling server)."""

    def __init__(self, url: str, deadline: float) -> None:
        self.deadline = deadline
        super().__init__(url, f"not complete within {deadline:g} s")


class InstallBusy(RegistryError):
    """Another process kept installing this agent for longer than ``RegistryLimits.install_wait``, or an agent
    still runs from the folder a new install would replace."""

    def __init__(self, agent_id: str, problem: str) -> None:
        self.agent_id = agent_id
        self.problem = problem
        super().__init__(f"cannot install {agent_id} now: {problem}")


class OutsideCache(RegistryError):
    """A folder the installer would create or remove does not resolve inside the agent's own cache folder (a
    symbolic link planted in the cache, say): nothing is written or removed."""

    def __init__(self, path: str, root: str) -> None:
        self.path = path
        self.root = root
        super().__init__(f"refusing to touch {path}: it is not inside {root}")


class RegistryOffline(RegistryError):
    """The network could not be reached and nothing usable is cached."""

    def __init__(self, what: str, problem: str) -> None:
        self.what = what
        self.problem = problem
        super().__init__(f"cannot fetch {what} ({problem}) and nothing is cached: connect to the network once")
