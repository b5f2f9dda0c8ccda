"""From an agent id to the command that starts it on this machine.

An id (or a friendly alias such as ``codex``) is looked up in a registry; its stable or preview channel is
turned into an ``AgentCommand`` for this platform. Preference: a binary for this platform (no runtime
needed), then ``npx``, then ``uvx``; a launcher that is not installed is skipped when another distribution
is available. The registry's ``env`` is merged over the caller's environment, minus the variables the
registry's own tooling refuses to let an entry set (process plumbing and credentials of other systems).
"""

from __future__ import annotations

import difflib
import os
import platform as _platform
import re
import shutil
import sys
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from .checks import ID_PATTERN, check_binary_target, check_folder_names, check_package
from .errors import LauncherMissing, NoDistribution, UnknownAgent
from .install import Progress, hold_install, install_binary, installed_folder
from .limits import DEFAULT_REGISTRY_LIMITS, RegistryLimits
from .model import BinaryTarget, Distribution, PackageDistribution, Registry, RegistryAgent
from .source import load_registry

__all__ = [
    "ALIASES",
    "AgentCommand",
    "current_platform",
    "find_agent",
    "named_agent",
    "pinned_command",
    "resolve_agent",
    "resolve_command",
    "sanitize_env",
]

ALIASES: dict[str, str] = {
    "claude": "claude-acp",
    "codex": "codex-acp",
    "gemini": "gemini",
    "opencode": "opencode",
    "copilot": "github-copilot-cli",
}
"""Friendly names for the common agents (``acp-session chat --agent codex``)."""

_RESERVED_NAMES = frozenset(
    {
        "CI",
        "COMSPEC",
        "HOME",
        "PATH",
        "PATHEXT",
        "REQUESTS_CA_BUNDLE",
        "SSL_CERT_DIR",
        "SSL_CERT_FILE",
        "SystemRoot",
        "TEMP",
        "TMP",
        "TMPDIR",
        "WINDIR",
    }
)
_RESERVED_PREFIXES = (
    "ACTIONS_",
    "AWS_",
    "AZURE_",
    "DYLD_",
    "GCLOUD_",
    "GITHUB_",
    "GOOGLE_",
    "LD_",
    "NODE_",
    "NPM_",
    "PIP_",
    "PYTHON",
    "RUNNER_",
    "SSH_",
    "UV_",
    "XDG_",
)


def sanitize_env(env: Mapping[str, str]) -> dict[str, str]:
    """The registry-provided variables an entry may set: those that touch process plumbing (``PATH``,
    ``HOME``, ``LD_*``, ``NODE_*``, ``PYTHON*``, ...) or other systems' credentials (``AWS_*``, ``GITHUB_*``,
    ``SSH_*``, ...) are dropped, as the registry's tooling does; so are names that are not names (with ``=``,
    a NUL or another control character) and values holding a NUL."""
    return {
        name: value
        for name, value in env.items()
        if name.strip()
        and name.strip() not in _RESERVED_NAMES
        and not name.strip().startswith(_RESERVED_PREFIXES)
        and not _NOT_A_NAME.search(name)
        and "\x00" not in value
    }


_NOT_A_NAME = re.compile(r"[=\x00-\x1f\x7f]")


@dataclass(frozen=True)
class AgentCommand:
    """How to start an agent: ``argv``, variables to set over the caller's environment, working directory
    (None: the caller's). ``agent_id``, ``version`` and ``kind`` (binary, npx, uvx) say where it came from;
    for npx and uvx, ``package`` is the package spec (``@scope/name@1.2.3``, ``name==1.2.3``), ``program`` the
    entry's ``cmd`` (None: the package's own) and ``args`` the entry's arguments, for callers that install the
    package themselves (``make real-agents``). ``install_folder`` is a binary's installed folder: ``in_use()``
    keeps other installs from removing it while the agent runs."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    agent_id: str = ""
    version: str = ""
    kind: str = ""
    package: str = ""
    program: str | None = None
    args: list[str] = field(default_factory=list)
    install_folder: str | None = None

    def in_use(self) -> AbstractContextManager[None]:
        """Hold this while the agent runs: no install (here or in another process) removes its folder."""
        return hold_install(Path(self.install_folder)) if self.install_folder else nullcontext()

    def environment(self, base: Mapping[str, str] | None) -> dict[str, str] | None:
        """The agent's environment: ``base`` (None: this process's) with ``env`` merged over it."""
        if not self.env:
            return None if base is None else dict(base)
        return {**(os.environ if base is None else base), **self.env}


def current_platform() -> str:
    """This machine's ``<os>-<arch>`` key (``linux-x86_64``, ``darwin-aarch64``, ...)."""
    system = {"linux": "linux", "darwin": "darwin", "win32": "windows"}.get(sys.platform, sys.platform)
    machine = _platform.machine().lower()
    arch = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return f"{system}-{arch}"


def find_agent(registry: Registry, name: str) -> RegistryAgent:
    """The agent called ``name`` (an id, or an alias of ``ALIASES``), else ``UnknownAgent`` with close ids."""
    wanted = ALIASES.get(name, name)
    for agent in registry.agents:
        if agent.id == wanted:
            return agent
    ids = [agent.id for agent in registry.agents]
    by_name = {agent.name.lower(): agent.id for agent in registry.agents}
    close = difflib.get_close_matches(name, ids + list(ALIASES), n=3, cutoff=0.6)
    close += [agent_id for agent_id in ids if name in agent_id and len(name) >= 3]
    if not close:  # then the display names ("Claude Agent" for "claude-agent")
        close = [by_name[n] for n in difflib.get_close_matches(name.lower(), list(by_name), n=2, cutoff=0.6)]
    unique = list(dict.fromkeys(ALIASES.get(c, c) for c in close))[:4]
    raise UnknownAgent(name, unique, registry.origin)


def _channel(agent: RegistryAgent, channel: str, platform: str) -> tuple[str, Distribution]:
    if channel == "stable":
        return agent.version, agent.distribution
    if channel != "preview":
        raise ValueError(f"channel must be 'stable' or 'preview' (got {channel!r})")
    if agent.preview is None:
        raise NoDistribution(agent.id, platform, [], channel="preview")
    return agent.preview.version, agent.preview.distribution


def _package_argv(launcher: str, dist: PackageDistribution) -> list[str]:
    # --yes: npx would otherwise ask before installing, on the agent's stdin, which is the protocol pipe.
    # "--" ends the launcher's options, so neither the package nor the program can be read as one; both npx
    # and uvx take the first word after it as the package (or, with --package=/--from=, the program).
    if launcher == "npx":
        head = ["--yes", f"--package={dist.package}", "--", dist.cmd] if dist.cmd else ["--yes", "--", dist.package]
    else:
        head = [f"--from={dist.package}", "--", dist.cmd] if dist.cmd else ["--", dist.package]
    return [launcher, *head, *dist.args]


def _binary_argv(folder: str, target: BinaryTarget) -> list[str]:
    cmd = target.cmd.replace("\\", "/")
    while cmd.startswith("./"):
        cmd = cmd[2:]
    return [os.path.join(folder, *cmd.split("/")), *target.args]


def resolve_command(
    agent: RegistryAgent,
    *,
    channel: str = "stable",
    platform: str | None = None,
    install: bool = True,
    progress: Progress | None = None,
    limits: RegistryLimits = DEFAULT_REGISTRY_LIMITS,
) -> AgentCommand:
    """``agent``'s command on ``platform`` (default: this one). A binary is downloaded and extracted first
    unless ``install=False`` (then the command points where it will be). An entry whose names are not plain
    (``id``, ``version``, ``cmd``, path arguments, npx/uvx ``package``) is ``InvalidEntry``, before anything
    is written or run."""
    platform = platform or current_platform()
    version, dist = _channel(agent, channel, platform)
    target = dist.binary.get(platform)
    if target is not None:
        check_binary_target(agent.id, target)
        if install:
            folder = install_binary(agent.id, version, platform, target, progress, limits=limits)
        else:
            folder = installed_folder(agent.id, version, platform)
        argv = _binary_argv(str(folder), target)
        return AgentCommand(
            argv,
            sanitize_env(target.env),
            None,
            agent.id,
            version,
            "binary",
            args=target.args,
            install_folder=str(folder),
        )
    check_folder_names(agent.id, version, platform)
    missing: list[str] = []
    for launcher, package in (("npx", dist.npx), ("uvx", dist.uvx)):
        if package is None:
            continue
        check_package(agent.id, launcher, package)
        if shutil.which(launcher) is None:
            missing.append(launcher)
            continue
        argv = _package_argv(launcher, package)
        env = sanitize_env(package.env)
        return AgentCommand(argv, env, None, agent.id, version, launcher, package.package, package.cmd, package.args)
    if missing:
        raise LauncherMissing(agent.id, missing[0])
    available = [f"binary for {key}" for key in dist.binary] + [k for k in dist.kinds if k != "binary"]
    raise NoDistribution(agent.id, platform, available, channel)


def resolve_agent(
    name: str,
    *,
    registry: Registry | str | os.PathLike[str] | None = None,
    channel: str = "stable",
    install: bool = True,
    progress: Progress | None = None,
    limits: RegistryLimits = DEFAULT_REGISTRY_LIMITS,
) -> AgentCommand:
    """Look ``name`` up (an id or alias) in ``registry`` (a loaded one, a file, a URL, or None for the default
    of ``load_registry``) and resolve it for this machine."""
    loaded = registry if isinstance(registry, Registry) else load_registry(registry, limits=limits)
    agent = find_agent(loaded, name)
    return resolve_command(agent, channel=channel, install=install, progress=progress, limits=limits)


_ID = ID_PATTERN
_NPM_SPEC = re.compile(r"^(@[^/@]+/[^@]+|[^@]+)(?:@.*)?$")


def _pin(launcher: str, package: str, version: str) -> str:
    if launcher == "npx":
        match = _NPM_SPEC.match(package)
        return f"{match.group(1) if match else package}@{version}"
    name = re.split(r"[<>=!@~\[ ]", package, maxsplit=1)[0]
    return f"{name}=={version}"


def pinned_command(
    name: str,
    version: str,
    *,
    registry: Registry | str | os.PathLike[str] | None = None,
    install: bool = True,
    progress: Progress | None = None,
    limits: RegistryLimits = DEFAULT_REGISTRY_LIMITS,
) -> AgentCommand:
    """The command for ``name`` at exactly ``version`` (for pinned test runs such as ``make real-agents``).

    The registry's entry gives the package and its arguments; an ``npx``/``uvx`` package is pinned to
    ``version`` even when the registry has moved on. A binary is only available at the registry's stable or
    preview version (its URLs and checksums are per version): another version is ``NoDistribution``."""
    loaded = registry if isinstance(registry, Registry) else load_registry(registry, limits=limits)
    agent = find_agent(loaded, name)
    if agent.preview is not None and agent.preview.version == version:
        return resolve_command(agent, channel="preview", install=install, progress=progress, limits=limits)
    if agent.version == version:
        return resolve_command(agent, install=install, progress=progress, limits=limits)
    dist = agent.distribution
    npx, uvx = dist.npx, dist.uvx
    pinned = Distribution(
        npx=None if npx is None else msgspec.structs.replace(npx, package=_pin("npx", npx.package, version)),
        uvx=None if uvx is None else msgspec.structs.replace(uvx, package=_pin("uvx", uvx.package, version)),
    )
    if pinned.npx is None and pinned.uvx is None:
        raise NoDistribution(agent.id, f"version {version}", [f"version {agent.version}"])
    at_version = msgspec.structs.replace(agent, version=version, distribution=pinned, preview=None)
    return resolve_command(at_version, install=install, progress=progress, limits=limits)


def named_agent(
    value: str,
    *,
    registry: Registry | str | os.PathLike[str] | None = None,
    channel: str = "stable",
    install: bool = True,
    progress: Progress | None = None,
    limits: RegistryLimits = DEFAULT_REGISTRY_LIMITS,
) -> AgentCommand | None:
    """What a command-line ``--agent VALUE`` names, when it names a registry agent; None for a command line.

    A friendly alias (``ALIASES``) is always the registry's agent. Another single word is a program when one of
    that name is on PATH (as before registry ids existed), else a registry id (``UnknownAgent``, with close
    matches, when it is none). Anything with a space or a path separator is a command line."""
    word = value.strip()
    if not _ID.fullmatch(word):  # a space, a path separator, a quote...: a command line
        return None
    if word not in ALIASES and shutil.which(word) is not None:
        return None
    try:
        return resolve_agent(
            word, registry=registry, channel=channel, install=install, progress=progress, limits=limits
        )
    except UnknownAgent as exc:
        raise UnknownAgent(word, exc.close_matches, exc.origin, not_a_command=True) from None
