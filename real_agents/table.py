"""The agents table (``agents.toml``): what to install and how to start each agent."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    try:
        import tomli as tomllib
    except ImportError:
        tomllib = None

__all__ = ["DEFAULT_CACHE", "REPO", "TABLE", "AgentSpec", "TableError", "load_agents"]

REPO = Path(__file__).resolve().parent.parent
TABLE = Path(__file__).resolve().parent / "agents.toml"
DEFAULT_CACHE = REPO / ".cache" / "real-agents"

_KEYS = {"package", "version", "bin", "script", "args", "credentials", "login", "prompt", "model", "note"}


class TableError(ValueError):
    """The agents table is malformed."""


@dataclass(frozen=True)
class AgentSpec:
    name: str
    package: str
    version: str
    bin: str | None = None
    script: str | None = None
    args: tuple[str, ...] = ()
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
        if self.bin is not None:
            return [str((cache / "node_modules" / ".bin" / self.bin).absolute()), *self.args]
        assert self.script is not None
        node = node or shutil.which("node") or "node"
        return [node, str((self.package_dir(cache) / self.script).absolute()), *self.args]

    @property
    def spec(self) -> str:
        """``package@version``, as given to npm."""
        return f"{self.package}@{self.version}"


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TableError(f"{where}: expected a list of strings")
    return tuple(value)


def _one(name: str, raw: Any) -> AgentSpec:
    if not isinstance(raw, dict):
        raise TableError(f"agents.{name}: expected a table")
    unknown = set(raw) - _KEYS
    if unknown:
        raise TableError(f"agents.{name}: unknown keys {sorted(unknown)}")
    for key in ("package", "version"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise TableError(f"agents.{name}.{key}: required")
    version = raw["version"]
    if not all(part.isdigit() for part in version.split(".")) or version.count(".") != 2:
        raise TableError(f"agents.{name}.version: pin an exact version (MAJOR.MINOR.PATCH), got {version!r}")
    if ("bin" in raw) == ("script" in raw):
        raise TableError(f"agents.{name}: give exactly one of bin, script")
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
        raise TableError(f"agents.{name}.model: the name of a model wiring (real_agents/wiring.py)")
    return AgentSpec(
        name=name,
        package=raw["package"],
        version=version,
        bin=raw.get("bin"),
        script=raw.get("script"),
        args=_strings(raw.get("args", []), f"agents.{name}.args"),
        credentials=credentials,
        login=dict(login),
        prompt=prompt,
        model=model,
        note=str(raw.get("note", "")),
    )


def load_agents(path: Path = TABLE) -> dict[str, AgentSpec]:
    """Every agent of the table, in table order."""
    if tomllib is None:  # pragma: no cover - Python 3.10 without tomli
        raise TableError("reading agents.toml needs Python 3.11 or the tomli package")
    with open(path, "rb") as f:
        data = tomllib.load(f)
    agents = data.get("agents")
    if not isinstance(agents, dict) or not agents:
        raise TableError(f"{path}: no [agents.NAME] tables")
    return {name: _one(name, raw) for name, raw in agents.items()}
