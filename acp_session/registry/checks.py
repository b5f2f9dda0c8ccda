"""What a registry entry may name before any of it becomes a folder, a file to run or a launcher's argument.

A registry is input from the network: its ``id`` and ``version`` become folders of the cache, a binary's
``cmd`` and path arguments become files inside the extracted archive, an npx/uvx ``package`` becomes a
launcher's argument. Each is held to a conservative pattern here, so a hostile entry is refused
(``InvalidEntry``) before anything is written, removed or run.
"""

from __future__ import annotations

import re

from .errors import InvalidEntry
from .model import BinaryTarget, PackageDistribution

__all__ = [
    "ID_PATTERN",
    "check_binary_target",
    "check_folder_names",
    "check_package",
    "path_problem",
]

ID_PATTERN = re.compile(r"[a-z][a-z0-9-]{0,99}")
"""The registry's id pattern (``^[a-z][a-z0-9-]*$`` in its agent.schema.json), at most 100 characters."""
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,99}")
_PLATFORM = re.compile(r"[a-z0-9]{1,32}-[a-z0-9_]{1,32}")
# npm: an optional @scope/, a URL-safe name (npm refuses a leading "." or "_"), then an optional @version,
# tag or range without spaces or slashes (so no git, file or URL specs).
_NPM = re.compile(r"(?:@[A-Za-z0-9~][A-Za-z0-9._~-]*/)?[A-Za-z0-9~][A-Za-z0-9._~-]*(?:@[A-Za-z0-9^~<>=*.+_|-]+)?")
# PyPI (PEP 508 names): letters, digits and . _ - inside; optional [extras]; optional @version or specifiers.
_PYPI_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_PYPI_SPEC = r"(?:===|==|~=|!=|<=|>=|<|>)[A-Za-z0-9.*+!_-]+"
_PYPI = re.compile(
    rf"{_PYPI_NAME}(?:\[{_PYPI_NAME}(?:,{_PYPI_NAME})*\])?(?:@[A-Za-z0-9.+!_-]+|{_PYPI_SPEC}(?:,{_PYPI_SPEC})*)?"
)
_PROGRAM = re.compile(r"[A-Za-z0-9@][A-Za-z0-9@._+-]{0,213}")  # a package's bin name: no path, no option


def path_problem(text: str) -> str | None:
    """Why ``text`` is not a relative path inside a folder (as an archive member name must be), or None."""
    if "\x00" in text:
        return "holds a NUL character"
    slashed = text.replace("\\", "/")
    if slashed.startswith("/") or (len(slashed) > 1 and slashed[1] == ":"):
        return "is an absolute path"
    if ".." in slashed.split("/"):
        return "leaves its folder (..)"
    return None


def check_folder_names(agent_id: str, version: str, platform: str) -> None:
    """``id``, ``version`` and the platform key become ``agents/<id>/<version>/<platform>``: plain names only."""
    if not ID_PATTERN.fullmatch(agent_id):
        raise InvalidEntry(agent_id, "id", agent_id, "is not a registry id ([a-z][a-z0-9-]*, at most 100)")
    if not _VERSION.fullmatch(version) or ".." in version:
        raise InvalidEntry(agent_id, "version", version, "is not a plain version (letters, digits, . + _ -)")
    if not _PLATFORM.fullmatch(platform):
        raise InvalidEntry(agent_id, "platform", platform, "is not a platform key (<os>-<arch>)")


def _looks_like_path(arg: str) -> bool:
    """An argument naming a file (``./lib/main.js``, ``../x``, ``/bin/sh``) rather than a word or an option."""
    return not arg.startswith("-") and ("/" in arg or "\\" in arg or arg in (".", ".."))


def check_binary_target(agent_id: str, target: BinaryTarget) -> None:
    """A binary's ``cmd`` and its path arguments must name files inside the extracted archive."""
    cmd_parts = [p for p in target.cmd.replace("\\", "/").split("/") if p not in ("", ".")]
    problem = path_problem(target.cmd) or (None if cmd_parts else "names no file")
    if problem is not None:
        raise InvalidEntry(agent_id, "cmd", target.cmd, problem)
    for arg in target.args:
        problem = path_problem(arg) if _looks_like_path(arg) else ("holds a NUL character" if "\x00" in arg else None)
        if problem is not None:
            raise InvalidEntry(agent_id, "argument", arg, problem)


def check_package(agent_id: str, launcher: str, dist: PackageDistribution) -> None:
    """An npx/uvx ``package`` must be a package name (npm's or PyPI's rules) with an optional version, and
    ``cmd`` a program name, so the launcher can read neither as an option, a path or a URL."""
    pattern, rules = (_NPM, "npm") if launcher == "npx" else (_PYPI, "PyPI")
    if len(dist.package) > 256 or not pattern.fullmatch(dist.package):
        raise InvalidEntry(agent_id, f"{launcher} package", dist.package, f"is not a package name by {rules}'s rules")
    if dist.cmd is not None and not _PROGRAM.fullmatch(dist.cmd):
        raise InvalidEntry(agent_id, f"{launcher} cmd", dist.cmd, "is not a program name")
    for arg in dist.args:
        if "\x00" in arg:
            raise InvalidEntry(agent_id, "argument", arg, "holds a NUL character")
