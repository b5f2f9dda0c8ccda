"""Safe extraction of an agent's archive: every member must stay inside the target folder.

Refused, for the whole archive: absolute paths (``/x``, ``C:\\x``), paths with a ``..`` part, symbolic links
whose target is absolute or leaves the folder once resolved through every other link of the archive (a chain
``a/b/c/l1 -> ../../..`` then ``l2 -> a/b/c/l1/../../../..`` is judged as the file system would follow it,
whatever the members' order), members written through a symbolic link, hard links to anything but a regular
file met before, device or FIFO entries, and archives past ``RegistryLimits`` (members, extracted bytes).
Members are checked before anything is written; the caller extracts into a fresh temporary folder and only
moves it into place when everything succeeded.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections import deque
from pathlib import Path, PurePosixPath
from typing import IO

from .checks import path_problem
from .errors import UnsafeArchive
from .limits import DEFAULT_REGISTRY_LIMITS, RegistryLimits

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
MAX_LINK_HOPS = 40  # as Linux's ELOOP
CHUNK = 256 * 1024


def archive_kind(url: str) -> str:
    """``zip``, ``tar`` or ``raw`` (a bare executable), from the URL's file name."""
    name = posixpath.basename(url.split("?", 1)[0].split("#", 1)[0]).lower()
    for suffix, kind in ARCHIVE_SUFFIXES.items():
        if name.endswith(suffix):
            return kind
    return "raw"


def _checked_name(name: str) -> PurePosixPath:
    """The member's path inside the folder, or ``UnsafeArchive``."""
    problem = path_problem(name)
    if problem is not None:
        raise UnsafeArchive(name, "absolute path" if "absolute" in problem else f"path {problem}")
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


class _Members:
    """Every member of one archive, checked as a whole: the links (so each is resolved through all the
    others), what lies below a link (refused: it would be written through it), sizes and counts."""

    def __init__(self, limits: RegistryLimits) -> None:
        self.limits = limits
        self.links: dict[PurePosixPath, str] = {}
        self.kinds: dict[PurePosixPath, str] = {}
        self.count = 0
        self.total = 0

    def add(self, name: str, kind: str, size: int = 0, link: str | None = None) -> PurePosixPath:
        where = _checked_name(name)
        self.count += 1
        if self.count > self.limits.members:
            raise UnsafeArchive("", f"more than {self.limits.members} members")
        self.total += max(size, 0)
        if self.total > self.limits.extracted_bytes:
            raise UnsafeArchive(name, f"the archive expands past {self.limits.extracted_bytes} bytes")
        seen = self.kinds.get(where)
        if seen is not None and "symlink" in (seen, kind):
            raise UnsafeArchive(name, "the same path twice, once as a symbolic link")
        self.kinds[where] = kind
        if link is not None:
            text = link.replace("\\", "/")
            if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
                raise UnsafeArchive(name, f"symbolic link to an absolute path ({link})")
            self.links[where] = text
        return where

    def check(self) -> None:
        """Once every member is known: nothing below a link, and every link resolves inside the folder."""
        for where in self.kinds:
            for parent in where.parents:
                if parent in self.links:
                    raise UnsafeArchive(str(where), f"written through the symbolic link {parent}")
        for where, target in self.links.items():
            self.resolve(str(where), [*where.parent.parts, *target.split("/")])

    def resolve(self, name: str, parts: list[str]) -> PurePosixPath:
        """Follow ``parts`` from the folder as the file system would, through the archive's links."""
        queue, stack, hops = deque(parts), list[str](), 0
        while queue:
            part = queue.popleft()
            if part in ("", "."):
                continue
            if part == "..":
                if not stack:
                    raise UnsafeArchive(name, "symbolic link out of the install folder")
                stack.pop()
                continue
            stack.append(part)
            target = self.links.get(PurePosixPath(*stack))
            if target is not None:
                hops += 1
                if hops > MAX_LINK_HOPS:
                    raise UnsafeArchive(name, "symbolic links that loop")
                stack.pop()
                queue.extendleft(reversed(target.split("/")))
        return PurePosixPath(*stack) if stack else PurePosixPath(".")


def _check_tar(tar: tarfile.TarFile, limits: RegistryLimits) -> list[tarfile.TarInfo]:
    members: list[tarfile.TarInfo] = []
    checked = _Members(limits)
    files: set[PurePosixPath] = set()
    for member in tar:  # one header at a time: a bomb of members is refused before it is all read
        members.append(member)
        if member.issym():
            checked.add(member.name, "symlink", link=member.linkname)
        elif member.islnk():
            checked.add(member.name, "file")
            if _checked_name(member.linkname) not in files:
                raise UnsafeArchive(
                    member.name, f"hard link to something other than a file before it ({member.linkname})"
                )
        elif member.isfile():
            files.add(checked.add(member.name, "file", member.size))
        elif member.isdir():
            checked.add(member.name, "dir")
        else:
            raise UnsafeArchive(member.name, "device, FIFO or other special file")
    checked.check()
    return members


_FILTER_REASONS = {
    "AbsolutePathError": "absolute path",
    "OutsideDestinationError": "path leaves the install folder",
    "AbsoluteLinkError": "symbolic link to an absolute path",
    "LinkOutsideDestinationError": "symbolic link out of the install folder",
    "SpecialFileError": "device, FIFO or other special file",
}


def _extract_checked_tar(tar: tarfile.TarFile, dest: Path, members: list[tarfile.TarInfo]) -> None:
    """Extract already checked ``members``; Python's ``data`` filter (3.12+ and security releases) is a second
    line of defence, and what it refuses is an ``UnsafeArchive`` naming the member, not the temporary path."""
    if not hasattr(tarfile, "data_filter"):
        tar.extractall(dest, members=members)  # every member was checked above
        return
    try:
        tar.extractall(dest, members=members, filter="data")
    except tarfile.FilterError as exc:
        name = exc.tarinfo.name if exc.tarinfo is not None else ""
        raise UnsafeArchive(name, _FILTER_REASONS.get(type(exc).__name__, "refused by the tar data filter")) from None


def _extract_tar(path: Path, dest: Path, limits: RegistryLimits) -> None:
    try:
        with tarfile.open(path) as tar:
            _extract_checked_tar(tar, dest, _check_tar(tar, limits))
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise UnsafeArchive("", f"not a readable tar archive ({type(exc).__name__})") from None


def _copy_capped(source: IO[bytes], target: Path, budget: list[int], name: str) -> None:
    """Copy one member, counting its bytes against what the archive may still write (``budget[0]``)."""
    with open(target, "wb") as out:
        while data := source.read(CHUNK):
            budget[0] -= len(data)
            if budget[0] < 0:
                raise UnsafeArchive(name, "the archive expands past its declared sizes and the limit")
            out.write(data)


def _extract_zip(path: Path, dest: Path, limits: RegistryLimits) -> None:
    try:
        with zipfile.ZipFile(path) as archive:
            _extract_zip_members(archive, dest, limits)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error) as exc:
        raise UnsafeArchive("", f"not a readable zip archive ({type(exc).__name__})") from None


def _extract_zip_members(archive: zipfile.ZipFile, dest: Path, limits: RegistryLimits) -> None:
    infos = archive.infolist()
    if len(infos) > limits.members:
        raise UnsafeArchive("", f"more than {limits.members} members")
    checked = _Members(limits)
    link_targets: dict[str, str] = {}
    for info in infos:
        if stat.S_ISLNK(info.external_attr >> 16):  # a symbolic link: its target is the member's content
            if info.file_size > 4096:
                raise UnsafeArchive(info.filename, "symbolic link with an oversized target")
            link_targets[info.filename] = archive.read(info).decode("utf-8", "replace")
            checked.add(info.filename, "symlink", link=link_targets[info.filename])
        else:
            checked.add(info.filename, "dir" if info.is_dir() else "file", info.file_size)
    checked.check()
    budget = [limits.extracted_bytes]
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
        with archive.open(info) as source:
            _copy_capped(source, target, budget, info.filename)
        mode = (info.external_attr >> 16) & 0o777
        if mode:
            os.chmod(target, mode & 0o755 | 0o600)


def extract(path: Path, dest: Path, kind: str, raw_name: str, limits: RegistryLimits = DEFAULT_REGISTRY_LIMITS) -> None:
    """Unpack the downloaded ``path`` into the empty folder ``dest``; a raw file is copied as ``raw_name``."""
    if kind == "zip":
        _extract_zip(path, dest, limits)
    elif kind == "tar":
        _extract_tar(path, dest, limits)
    else:
        target = dest / _checked_name(raw_name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        os.chmod(target, 0o755)
