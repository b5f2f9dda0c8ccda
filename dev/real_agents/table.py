"""The agents table (``agents.toml``): what to install and how to start each agent.

An agent with a ``registry`` id is resolved through acp-session's own registry code
(``acp_session.registry.pinned_command``, against the snapshot bundled in the package, so offline): the entry
gives the npm package, its command and arguments, pinned to the table's exact ``version``. The package is
installed into the cache folder (``install.py``) and run from there, never through ``npx``, so a run needs no
network once installed. An agent without a registry entry gives its package and command itself.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_session.registry import RegistryError, pinned_command

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    try:
        import tomli as tomllib
    except ImportError:
        tomllib = None

__all__ = ["DEFAULT_CACHE", "REGISTRY", "REPO", "TABLE", "AgentSpec", "TableError", "load_agents"]

REPO = Path(__file__).resolve().parents[2]  # the checkout (this file is dev/real_agents/table.py)
TABLE = Path(__file__).resolve().parent / "agents.toml"
DEFAULT_CACHE = REPO / ".cache" / "real-agents"
REGISTRY = "bundled"
"""Where registry ids are looked up: the snapshot inside acp_session (dated, committed), so pins resolve offline."""

_KEYS = {"registry", "package", "version", "bin", "script", "args", "credentials", "login", "prompt", "model", "note"}
_JS = (".js", ".mjs", ".cjs")


class TableError(ValueError):
    """The agents table is malformed."""


@dataclass(frozen=True)
class AgentSpec:
    """One agent of the table, its registry entry (if any) already resolved.

    ``registry`` is the registry id; then ``program`` is the entry's ``cmd`` (None: the package's own command)
    and ``args`` the entry's arguments; ``registry_package`` is the package the entry names, which ``package``
    differs from only when the table overrides it (builds published under an older name)."""

    name: str
    package: str
    version: str
    bin: str | None = None
    script: str | None = None
    args: tuple[str, ...] = ()
    registry: str | None = None
    program: str | None = None
    registry_package: str = ""
    credentials: tuple[str, ...] = ()
    login: Mapping[str, str] = field(default_factory=dict)
    prompt: str = "credentials"
    model: str | None = None
    note: str = ""

    def package_dir(self, cache: Path) -> Path:
        return cache / "node_modules" / self.package

    def installed_version(self, cache: Path) -> str | None:
        """The version installed in ``cache`` (None when the package is not there)."""
        try:
            meta = json.loads((self.package_dir(cache) / "package.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        version = meta.get("version") if isinstance(meta, dict) else None
        return version if isinstance(version, str) else None

    def argv(self, cache: Path, node: str | None = None) -> list[str]:
        """The command line, with absolute paths (an agent runs in a temporary working directory)."""
        node = node or shutil.which("node") or "node"
        if self.registry is not None:
            return [*self._registry_command(cache, node), *self.args]
        if self.bin is not None:
            return [str((cache / "node_modules" / ".bin" / self.bin).absolute()), *self.args]
        assert self.script is not None
        return [node, str((self.package_dir(cache) / self.script).absolute()), *self.args]

    def _registry_command(self, cache: Path, node: str) -> list[str]:
        """The installed file npx would run for the entry (``cmd``, else the package's only or same-named command),
        found through the package's own ``bin``: two builds of one agent install the same command name in
        ``.bin``, so the link there may belong to the other build."""
        own = self.package.rsplit("/", 1)[-1]
        name = self.program or own
        try:
            meta = json.loads((self.package_dir(cache) / "package.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = {}
        bins = meta.get("bin") if isinstance(meta, dict) else None
        target: Any = None
        if isinstance(bins, str):
            target = bins if name == own else None
        elif isinstance(bins, dict):
            target = bins.get(name)
            if target is None and self.program is None and len(bins) == 1:
                target = next(iter(bins.values()))
        if not isinstance(target, str):  # not installed yet (or an odd package): where npm links the command
            return [str((cache / "node_modules" / ".bin" / name).absolute())]
        path = (self.package_dir(cache) / target).absolute()
        return [node, str(path)] if _runs_on_node(path) else [str(path)]

    @property
    def spec(self) -> str:
        """``package@version``, as given to npm."""
        return f"{self.package}@{self.version}"


def _runs_on_node(path: Path) -> bool:
    if path.suffix in _JS:
        return True
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"node" in first


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TableError(f"{where}: expected a list of strings")
    return tuple(value)


def _package_name(spec: str) -> str:
    """``@scope/name`` of ``@scope/name@1.2.3`` (npm's ``name@version``)."""
    at = spec.rfind("@")
    return spec[:at] if at > 0 else spec


def _from_registry(name: str, raw: dict[str, Any], registry: str) -> dict[str, Any]:
    """The package, command and arguments of the table's registry id at its pinned version."""
    agent_id = raw["registry"]
    if not isinstance(agent_id, str) or not agent_id:
        raise TableError(f"agents.{name}.registry: a registry id (acp-session agents lists them)")
    given = sorted({"bin", "script", "args"} & set(raw))
    if given:
        raise TableError(f"agents.{name}: {given} come from the registry entry {agent_id!r}; remove them")
    try:
        command = pinned_command(agent_id, raw["version"], registry=registry, install=False)
    except RegistryError as exc:
        raise TableError(f"agents.{name}.registry: {exc}") from exc
    if command.kind != "npx":
        raise TableError(
            f"agents.{name}.registry: {agent_id!r} resolves to {command.kind!r}; the harness installs npm packages"
        )
    listed = _package_name(command.package)
    package = raw.get("package", listed)
    if not isinstance(package, str) or not package:
        raise TableError(f"agents.{name}.package: the npm package name")
    return {
        "package": package,
        "registry": command.agent_id,
        "program": command.program,
        "args": tuple(command.args),
        "registry_package": listed,
    }


def _one(name: str, raw: Any, registry: str) -> AgentSpec:
    if not isinstance(raw, dict):
        raise TableError(f"agents.{name}: expected a table")
    unknown = set(raw) - _KEYS
    if unknown:
        raise TableError(f"agents.{name}: unknown keys {sorted(unknown)}")
    required = ("version",) if "registry" in raw else ("package", "version")
    for key in required:
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise TableError(f"agents.{name}.{key}: required")
    version = raw["version"]
    if not all(part.isdigit() for part in version.split(".")) or version.count(".") != 2:
        raise TableError(f"agents.{name}.version: pin an exact version (MAJOR.MINOR.PATCH), got {version!r}")
    if "registry" in raw:
        command = _from_registry(name, raw, registry)
    elif ("bin" in raw) == ("script" in raw):
        raise TableError(f"agents.{name}: give exactly one of bin, script (or a registry id)")
    else:
        command = {
            "package": raw["package"],
            "bin": raw.get("bin"),
            "script": raw.get("script"),
            "args": _strings(raw.get("args", []), f"agents.{name}.args"),
        }
    login = raw.get("login", {})
    if not isinstance(login, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in login.items()):
        raise TableError(f"agents.{name}.login: expected a table of strings")
    credentials = _strings(raw.get("credentials", []), f"agents.{name}.credentials")
    if set(login) - set(credentials):
        raise TableError(f"agents.{name}.login: {sorted(set(login) - set(credentials))} are not credentials")
    prompt = raw.get("prompt", "credentials")
    if prompt not in ("credentials", "always"):
        raise TableError(f"agents.{name}.prompt: 'credentials' or 'always'")
    model = raw.get("model")
    if model is not None and not isinstance(model, str):
        raise TableError(f"agents.{name}.model: the name of a model wiring (dev/real_agents/wiring.py)")
    return AgentSpec(
        name=name,
        version=version,
        **command,
        credentials=credentials,
        login=dict(login),
        prompt=prompt,
        model=model,
        note=str(raw.get("note", "")),
    )


def load_agents(path: Path = TABLE, *, registry: str = REGISTRY) -> dict[str, AgentSpec]:
    """Every agent of the table, in table order; registry ids are looked up in ``registry`` (a file, a URL,
    ``bundled``: see acp_session.registry.load_registry)."""
    if tomllib is None:  # pragma: no cover - Python 3.10 without tomli
        raise TableError("reading agents.toml needs Python 3.11 or the tomli package")
    with open(path, "rb") as f:
        data = tomllib.load(f)
    agents = data.get("agents")
    if not isinstance(agents, dict) or not agents:
        raise TableError(f"{path}: no [agents.NAME] tables")
    return {name: _one(name, raw, registry) for name, raw in agents.items()}
