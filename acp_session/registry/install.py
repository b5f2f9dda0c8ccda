"""Binary distributions: download once into the per-user cache, verify, extract safely, reuse.

An install lives in ``<cache>/agents/<id>/<version>/<platform>/`` with a marker file naming the archive URL
and its sha256; while the registry names the same version and URL the install is reused without touching the
network. A new version installs beside the old one, which is then removed unless an agent still runs from it.

Nothing is trusted: ``id`` and ``version`` must be plain names, and every folder created or removed must
resolve inside ``<cache>/agents/<id>`` (no symbolic link on the way) before it is touched. Installs of one
agent are serialised by a lock file, so concurrent callers each get the one complete folder. Downloads go to
a partial folder (``.partial-*``), hashed and size-capped as they arrive under a deadline, and are extracted
there; only a complete tree is renamed into place. A partial folder left by a killed process is removed by
the next install (of any agent).
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .checks import ID_PATTERN, check_binary_target, check_folder_names
from .errors import (
    ChecksumMismatch,
    DownloadFailed,
    DownloadTimedOut,
    DownloadTooLarge,
    InstallBusy,
    InvalidEntry,
    OutsideCache,
    RegistryOffline,
)
from .limits import DEFAULT_REGISTRY_LIMITS, RegistryLimits
from .lock import locked, try_locked
from .model import PLATFORMS, BinaryTarget
from .source import cache_dir

__all__ = ["Progress", "hold_install", "install_binary", "installed_folder", "remove_partial_installs"]

Progress = Callable[[int, "int | None"], object]
"""Called as bytes arrive: ``(received, total)``; total is None when the server does not say."""

MARKER = ".acp-session-install.json"
LOCK = ".install.lock"
IN_USE = ".in-use"
PARTIAL = ".partial-"
_OLD_PARTIALS = tuple(f".{platform}-" for platform in PLATFORMS)  # what earlier releases left behind
CHUNK = 256 * 1024


def _agents() -> Path:
    return cache_dir() / "agents"


def installed_folder(agent_id: str, version: str, platform: str) -> Path:
    """Where this agent's version lives for ``platform`` (``InvalidEntry`` for names that are not plain)."""
    check_folder_names(agent_id, version, platform)
    return _agents() / agent_id / version / platform


def _confined(path: Path, root: Path) -> Path:
    """``path`` when it resolves to itself below ``root`` inside the agents folder, with no symbolic link on the
    way (a link planted in the cache could point at the user's own folders); else ``OutsideCache``."""
    agents = os.path.realpath(_agents())
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(_agents()))
    expected = os.path.normpath(os.path.join(agents, relative))
    root_relative = os.path.relpath(os.path.abspath(root), os.path.abspath(_agents()))
    inside_root = os.path.join(agents, root_relative)
    if (
        relative.startswith("..")
        or os.path.realpath(path) != expected
        or os.path.commonpath([expected, inside_root]) != inside_root
    ):
        raise OutsideCache(str(path), str(root))
    return path


def _is_installed(folder: Path, target: BinaryTarget) -> bool:
    try:
        marker = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return bool(marker.get("archive") == target.archive and marker.get("sha256") == target.sha256)


def _command_path(tree: Path, agent_id: str, target: BinaryTarget) -> Path:
    """The entry's ``cmd`` inside ``tree``: an existing file that resolves inside it, else ``InvalidEntry``."""
    parts = [p for p in target.cmd.replace("\\", "/").split("/") if p not in ("", ".")]
    command = tree.joinpath(*parts)
    real_tree = os.path.realpath(tree)
    if os.path.commonpath([real_tree, os.path.realpath(command)]) != real_tree:
        raise InvalidEntry(agent_id, "cmd", target.cmd, "resolves outside the extracted archive")
    if not command.is_file():
        raise InvalidEntry(agent_id, "cmd", target.cmd, f"is not in the archive (it has no {target.cmd})")
    return command


def _download(url: str, into: Path, progress: Progress | None, cap: int, limits: RegistryLimits) -> str:
    """Stream ``url`` into the file ``into``, at most ``cap`` bytes and within the deadline; its sha256."""
    import http.client  # the network's and the archives' modules load for an install, not with every command line
    import urllib.error

    from .fetch import Deadline, TooLarge, read_capped, watched_urlopen

    digest = hashlib.sha256()
    received = 0
    total: int | None = None
    with Deadline(limits.download_deadline) as deadline, open(into, "wb") as out:

        def sink(chunk: bytes) -> None:
            nonlocal received
            digest.update(chunk)
            out.write(chunk)
            received += len(chunk)
            if progress is not None:
                progress(received, total)

        try:
            with watched_urlopen(url, deadline, limits.stall_timeout) as response:
                length = response.headers.get("Content-Length")
                total = int(length) if length and length.isdigit() else None
                if total is not None and total > cap:
                    raise DownloadTooLarge(url, cap)
                read_capped(response, deadline, cap, CHUNK, sink)
        except TooLarge:
            raise DownloadTooLarge(url, cap) from None
        except urllib.error.HTTPError as exc:
            raise DownloadFailed(url, f"HTTP {exc.code} {exc.reason}") from None
        except (OSError, http.client.HTTPException) as exc:
            if deadline.expired or deadline.remaining() <= 0:  # the socket timeout may fire first, at the deadline
                raise DownloadTimedOut(url, limits.download_deadline) from None
            if isinstance(exc, urllib.error.URLError):
                raise RegistryOffline(url, str(exc.reason)) from None
            raise DownloadFailed(url, str(exc) or type(exc).__name__) from None
    if total is not None and received != total:
        raise DownloadFailed(url, f"got {received} of {total} bytes")
    return digest.hexdigest()


def _sweep(root: Path) -> None:
    """Remove the partial folders under ``root`` (the caller holds the agent's lock: nobody is writing them)."""
    if not root.is_dir() or root.is_symlink():
        return
    for version_dir in root.iterdir():
        if version_dir.is_symlink() or not version_dir.is_dir():
            continue
        for entry in version_dir.iterdir():
            if entry.name.startswith((PARTIAL, *_OLD_PARTIALS)) and entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(_confined(entry, root), ignore_errors=True)


def remove_partial_installs() -> None:
    """Remove what interrupted installs left in the cache (a SIGKILL mid-download), for every agent no other
    process is installing right now. Every install runs this first."""
    agents = _agents()
    if not agents.is_dir():
        return
    for root in agents.iterdir():
        if not ID_PATTERN.fullmatch(root.name) or root.is_symlink() or not root.is_dir():
            continue
        with try_locked(root / LOCK) as free:
            if free:
                _sweep(root)


def _remove_other_versions(root: Path, keep: str) -> None:
    """Once ``keep`` is installed, other versions of the agent go (the cache keeps one per agent), except one an
    agent still runs from (its ``.in-use`` lock is held; a later install removes it)."""
    for version_dir in root.iterdir():
        if version_dir.name in (keep, LOCK) or version_dir.is_symlink() or not version_dir.is_dir():
            continue
        _confined(version_dir, root)
        with try_locked(version_dir / IN_USE, create=False) as free:
            if free:
                shutil.rmtree(version_dir, ignore_errors=True)


def _install(root: Path, folder: Path, target: BinaryTarget, progress: Progress | None, limits: RegistryLimits) -> None:
    from .archive import archive_kind, extract

    agent_id, version, platform = root.name, folder.parent.name, folder.name
    _confined(folder.parent, root).mkdir(exist_ok=True)
    work = _confined(Path(tempfile.mkdtemp(dir=folder.parent, prefix=f"{PARTIAL}{platform}-")), root)
    try:
        download = work / "download"
        cap = target.size if target.size is not None else limits.download_bytes
        actual = _download(target.archive, download, progress, cap, limits)
        if target.sha256 is not None and actual.lower() != target.sha256.lower():
            raise ChecksumMismatch(target.archive, target.sha256.lower(), actual)
        tree = work / "tree"
        tree.mkdir()
        raw_name = posixpath.basename(target.cmd.replace("\\", "/")) or "agent"
        extract(download, tree, archive_kind(target.archive), raw_name, limits)
        _command_path(tree, agent_id, target)
        (tree / MARKER).write_text(json.dumps({"archive": target.archive, "sha256": target.sha256, "got": actual}))
        if folder.exists() or folder.is_symlink():  # an install of another archive under the same version
            with try_locked(folder.parent / IN_USE, create=False) as free:
                if not free:
                    raise InstallBusy(agent_id, f"an agent runs from {version}, whose archive changed: end it first")
                if folder.is_symlink():
                    folder.unlink()  # the link only, never what it points to
                else:
                    shutil.rmtree(_confined(folder, root))
        os.replace(tree, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def install_binary(
    agent_id: str,
    version: str,
    platform: str,
    target: BinaryTarget,
    progress: Progress | None = None,
    *,
    limits: RegistryLimits = DEFAULT_REGISTRY_LIMITS,
) -> Path:
    """The folder holding this target's extracted archive, downloading it first unless already installed."""
    folder = installed_folder(agent_id, version, platform)
    check_binary_target(agent_id, target)
    root = folder.parent.parent
    remove_partial_installs()
    if _is_installed(folder, target):
        _command_path(_confined(folder, root), agent_id, target)
        with try_locked(root / LOCK) as free:
            if free:  # versions kept while an agent ran from them go now, unless one still does
                _remove_other_versions(root, version)
        return folder
    _confined(root, root).mkdir(parents=True, exist_ok=True)
    with locked(root / LOCK, wait=limits.install_wait) as held:
        if not held:
            raise InstallBusy(agent_id, f"another process is still installing it after {limits.install_wait:g} s")
        _sweep(root)
        if not _is_installed(folder, target):  # else another process installed it while this one waited
            _install(root, folder, target, progress, limits)
        _command_path(_confined(folder, root), agent_id, target)
        _remove_other_versions(root, version)
    return folder


@contextmanager
def hold_install(folder: Path) -> Iterator[None]:
    """While inside, no install (of this process or another) removes ``folder``'s version: a shared lock on its
    ``.in-use`` file. ``ClientBuilder.spawn`` holds it while a binary agent runs."""
    in_use = folder.parent / IN_USE
    if not folder.parent.is_dir():
        yield
        return
    with locked(in_use, wait=0.5, shared=True):  # held exclusively only while a version is being removed
        yield
