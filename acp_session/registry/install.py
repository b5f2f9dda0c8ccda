"""Binary distributions: download once into the per-user cache, verify, extract safely, reuse.

An install lives in ``<cache>/agents/<id>/<version>/<platform>/`` with a marker file naming the archive URL
and its sha256; while the registry names the same version and URL the install is reused without touching the
network. A new version installs beside the old one, which is then removed. Downloads go to a temporary file,
are hashed as they arrive, and are extracted into a temporary folder that is renamed into place only when
everything succeeded, so an interrupted or refused install leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from .archive import archive_kind, extract
from .errors import ChecksumMismatch, DownloadFailed, InvalidRegistry, RegistryOffline
from .model import BinaryTarget
from .source import cache_dir

__all__ = ["Progress", "install_binary", "installed_folder"]

Progress = Callable[[int, "int | None"], object]
"""Called as bytes arrive: ``(received, total)``; total is None when the server does not say."""

MARKER = ".acp-session-install.json"
CHUNK = 256 * 1024
DOWNLOAD_TIMEOUT = 30.0


def installed_folder(agent_id: str, version: str, platform: str) -> Path:
    return cache_dir() / "agents" / agent_id / version / platform


def _is_installed(folder: Path, target: BinaryTarget) -> bool:
    try:
        marker = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return bool(marker.get("archive") == target.archive and marker.get("sha256") == target.sha256)


def _download(url: str, into: Path, progress: Progress | None) -> str:
    """Stream ``url`` into the file ``into``; the sha256 of what arrived."""
    digest = hashlib.sha256()
    request = urllib.request.Request(url, headers={"User-Agent": "acp-session"})
    try:
        with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT) as response, open(into, "wb") as out:
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            received = 0
            while chunk := response.read(CHUNK):
                digest.update(chunk)
                out.write(chunk)
                received += len(chunk)
                if progress is not None:
                    progress(received, total)
    except urllib.error.HTTPError as exc:
        raise DownloadFailed(url, f"HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise RegistryOffline(url, str(exc.reason)) from None
    except OSError as exc:
        raise DownloadFailed(url, str(exc)) from None
    if total is not None and received != total:
        raise DownloadFailed(url, f"got {received} of {total} bytes")
    return digest.hexdigest()


def _remove_other_versions(folder: Path) -> None:
    """Once ``folder`` is installed, older versions of the same agent go (the cache keeps one per agent)."""
    agent_dir = folder.parent.parent
    for version_dir in agent_dir.iterdir():
        if version_dir != folder.parent and version_dir.is_dir():
            shutil.rmtree(version_dir, ignore_errors=True)


def install_binary(
    agent_id: str, version: str, platform: str, target: BinaryTarget, progress: Progress | None = None
) -> Path:
    """The folder holding this target's extracted archive, downloading it first unless already installed."""
    folder = installed_folder(agent_id, version, platform)
    if _is_installed(folder, target):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{platform}-"))
    try:
        download = work / "download"
        actual = _download(target.archive, download, progress)
        if target.sha256 is not None and actual.lower() != target.sha256.lower():
            raise ChecksumMismatch(target.archive, target.sha256.lower(), actual)
        tree = work / "tree"
        tree.mkdir()
        raw_name = posixpath.basename(target.cmd.replace("\\", "/")) or "agent"
        extract(download, tree, archive_kind(target.archive), raw_name)
        command = tree.joinpath(*[p for p in target.cmd.replace("\\", "/").split("/") if p not in ("", ".")])
        if not command.is_file():
            raise InvalidRegistry(f"{agent_id} {version}", f"its archive for {platform} has no {target.cmd}")
        (tree / MARKER).write_text(json.dumps({"archive": target.archive, "sha256": target.sha256, "got": actual}))
        if folder.exists():
            shutil.rmtree(folder)
        try:
            os.replace(tree, folder)
        except OSError:
            if not _is_installed(folder, target):  # else another process installed it meanwhile
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _remove_other_versions(folder)
    return folder
