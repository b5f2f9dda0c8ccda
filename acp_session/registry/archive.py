"""Safe extraction of an agent's archive: every member must stay inside the target folder.

Refused, for the whole archive: absolute paths (``/x``, ``C:\\x``), paths with a ``..`` part, symbolic links
whose target is absolute or leaves the folder, members written through a symbolic link, hard links to anything
outside it, and device or FIFO entries. Members are checked before anything is written; the caller extracts
into a fresh temporary folder and only moves it into place when everything succeeded.
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


class _Links:
    """The symbolic links met so far: nothing may be written through one (a link to ``.`` followed by a
    link ``that/..`` would otherwise climb out one level at a time)."""

    def __init__(self) -> None:
        self.paths: set[PurePosixPath] = set()

    def check(self, name: str, where: PurePosixPath, link_target: str | None = None) -> None:
        for parent in where.parents:
            if parent in self.paths:
                raise UnsafeArchive(name, f"written through the symbolic link {parent}")
        if link_target is not None:
            _check_link(name, where, link_target)
            self.paths.add(where)


def _check_tar(tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
    members = tar.getmembers()
    links = _Links()
    for member in members:
        where = _checked_name(member.name)
        if member.issym():
            links.check(member.name, where, member.linkname)
        elif member.islnk():
            links.check(member.name, where)
            links.check(member.name, _checked_name(member.linkname))  # another member, by its archive path
        elif member.isfile() or member.isdir():
            links.check(member.name, where)
        else:
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
        links = _Links()
        link_targets: dict[str, str] = {}
        for info in infos:
            where = _checked_name(info.filename)
            if stat.S_ISLNK(info.external_attr >> 16):  # a symbolic link: its target is the member's content
                if info.file_size > 4096:
                    raise UnsafeArchive(info.filename, "symbolic link with an oversized target")
                link_targets[info.filename] = archive.read(info).decode("utf-8", "replace")
                links.check(info.filename, where, link_targets[info.filename])
            else:
                links.check(info.filename, where)
        for info in infos:
            target = dest / _checked_name(info.filename)
            if info.filename in link_targets:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(link_targets[info.filename], target)
                continue
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
