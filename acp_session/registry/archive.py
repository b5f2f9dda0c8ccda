"""Safe extraction of an agent's archive: every member must stay inside the target folder.

Refused, for the whole archive: absolute paths (``/x``, ``C:\\x``), paths with a ``..`` part, symbolic links
whose target is absolute or leaves the folder, hard links to anything outside it, and device or FIFO
entries. Members are checked before anything is written; the caller extracts into a fresh temporary folder
and only moves it into place when everything succeeded.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from .errors import UnsafeArchive

__all__ = ["ARCHIVE_SUFFIXES", "archive_kind", "extract"]

ARCHIVE_SUFFIXES = {
    ".zip": "zip",
    ".tar.gz": "tar",
    ".tgz": "tar",
    ".tar.bz2": "tar",
    ".tbz2": "tar",
    ".tar.xz": "tar",
    ".tar": "tar",
}


def archive_kind(url: str) -> str:
    """``zip``, ``tar`` or ``raw`` (a bare executable), from the URL's file name."""
    name = posixpath.basename(url.split("?", 1)[0].split("#", 1)[0]).lower()
    for suffix, kind in ARCHIVE_SUFFIXES.items():
        if name.endswith(suffix):
            return kind
    return "raw"


def _checked_name(name: str) -> PurePosixPath:
    """The member's path inside the folder, or ``UnsafeArchive``."""
    text = name.replace("\\", "/")
    if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        raise UnsafeArchive(name, "absolute path")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchive(name, "path leaves the install folder (..)")
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def _check_link(name: str, where: PurePosixPath, target: str) -> None:
    """A symbolic link at ``where`` pointing to ``target`` must resolve inside the folder."""
    text = target.replace("\\", "/")
    if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        raise UnsafeArchive(name, f"symbolic link to an absolute path ({target})")
    depth = 0
    for part in [*where.parent.parts, *text.split("/")]:
        if part in ("", "."):
            continue
        depth = depth - 1 if part == ".." else depth + 1
        if depth < 0:
            raise UnsafeArchive(name, f"symbolic link out of the install folder ({target})")


def _check_tar(tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
    members = tar.getmembers()
    for member in members:
        where = _checked_name(member.name)
        if member.issym():
            _check_link(member.name, where, member.linkname)
        elif member.islnk():
            _checked_name(member.linkname)  # a hard link names another member by its path in the archive
        elif not (member.isfile() or member.isdir()):
            raise UnsafeArchive(member.name, "device, FIFO or other special file")
    return members


def _extract_tar(path: Path, dest: Path) -> None:
    with tarfile.open(path) as tar:
        members = _check_tar(tar)
        if hasattr(tarfile, "data_filter"):  # Python 3.12+ (and security releases): a second line of defence
            tar.extractall(dest, members=members, filter="data")
        else:
            tar.extractall(dest, members=members)  # every member was checked above


def _extract_zip(path: Path, dest: Path) -> None:
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        for info in infos:
            _checked_name(info.filename)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise UnsafeArchive(info.filename, "symbolic link in a zip archive")
        for info in infos:
            target = dest / _checked_name(info.filename)
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                os.chmod(target, mode & 0o755 | 0o600)


def extract(path: Path, dest: Path, kind: str, raw_name: str) -> None:
    """Unpack the downloaded ``path`` into the empty folder ``dest``; a raw file is copied as ``raw_name``."""
    if kind == "zip":
        _extract_zip(path, dest)
    elif kind == "tar":
        _extract_tar(path, dest)
    else:
        target = dest / _checked_name(raw_name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        os.chmod(target, 0o755)
