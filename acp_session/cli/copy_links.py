"""The symbolic links of a ``compare`` work copy, made unable to lead out of it.

A copy keeps the user's links as links (``copytree(symlinks=True)``; a git worktree checks them out as links), so
``data -> /home/me/real-data`` in the copy still leads into the user's real files, and an agent writing through it
would change them. After copying, every link of the copy whose target lies outside the copy is replaced:

- a target inside the user's directory (an absolute link into it, or a relative one climbing out and back in):
  a relative link to the same place inside the copy;
- a file or directory elsewhere: a copy of it (directories with their own links treated the same way), within
  ``LINK_COPY_FILES`` files and ``LINK_COPY_BYTES`` bytes per work copy, else ``UnsafeLink``;
- a target that does not exist: the link is left out (writing through it would create the file out there),
  with a notice;
- anything else (a device, a pipe, a socket): ``UnsafeLink``, which names the link.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["LINK_COPY_BYTES", "LINK_COPY_FILES", "UnsafeLink", "contain_links"]

LINK_COPY_FILES = 10_000
"""At most this many files are copied in place of the links of one work copy that lead outside it."""

LINK_COPY_BYTES = 256 * 2**20
"""At most this many bytes (256 MiB) are copied in place of the links of one work copy that lead outside it."""


class UnsafeLink(OSError):
    """A link of the user's directory leads outside it to something ``compare`` will not copy."""


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@dataclass
class _Containment:
    copy_root: str
    source_root: str
    notices: list[str] = field(default_factory=list)
    expanded: list[tuple[str, str]] = field(default_factory=list)  # (real source directory, its copy)
    files: int = 0
    size: int = 0

    def shown(self, link: str) -> str:
        return os.path.relpath(link, self.copy_root)

    def walk(self, folder: str, source: str) -> None:
        """Each link under ``folder`` (the copy of ``source``), depth first; ``.git`` left alone."""
        with os.scandir(folder) as entries:
            names = sorted(entry.name for entry in entries)
        for name in names:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                self.link(path, os.path.join(source, name))
            elif name != ".git" and os.path.isdir(path):
                self.walk(path, os.path.join(source, name))

    def link(self, path: str, source: str) -> None:
        """Judge the link by where it leads from the user's own directory (``source``: its place there)."""
        target = os.path.realpath(os.path.join(os.path.dirname(source), os.readlink(path)))
        here = self.place_in_copy(target)
        if here is not None:  # the copy has it: lead there (a write through it changes the copy, and is reported)
            if os.path.realpath(path) != os.path.realpath(here):
                os.unlink(path)
                os.symlink(os.path.relpath(here, os.path.dirname(path)), path)
            return
        os.unlink(path)
        try:
            info = os.stat(target)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                raise UnsafeLink(
                    f"{self.shown(path)} leads outside the directory to {target}: {exc.strerror}"
                ) from None
            self.notices.append(
                f"{self.shown(path)} leads outside the directory to {target}, which does not exist: "
                "left out of the copies"
            )
            return
        if stat.S_ISREG(info.st_mode):
            self.budget(path, target, 1, info.st_size)
            shutil.copy2(target, path)
        elif stat.S_ISDIR(info.st_mode):
            files, size = _measure(target, LINK_COPY_FILES - self.files + 1, LINK_COPY_BYTES - self.size + 1)
            self.budget(path, target, files, size)
            try:
                shutil.copytree(target, path, symlinks=True, ignore=_special_files)
            except shutil.Error as exc:
                raise UnsafeLink(
                    f"{self.shown(path)} leads outside the directory to {target}, which cannot be "
                    f"copied: {str(exc)[:200]}"
                ) from None
            self.expanded.append((target, path))
            self.walk(path, target)
        else:
            raise UnsafeLink(
                f"{self.shown(path)} leads outside the directory to {target}, which is not a file or "
                "a directory; compare cannot copy it (remove the link, or run the agents one by one)"
            )

    def place_in_copy(self, target: str) -> str | None:
        """Where ``target`` (a real path) is in the copy: inside the user's directory or a copied one."""
        for source, copy in [(self.source_root, self.copy_root), *reversed(self.expanded)]:
            if _inside(target, source):
                return os.path.join(copy, os.path.relpath(target, source))
        return None

    def budget(self, path: str, target: str, files: int, size: int) -> None:
        self.files += files
        self.size += size
        if self.files > LINK_COPY_FILES or self.size > LINK_COPY_BYTES:
            raise UnsafeLink(
                f"{self.shown(path)} leads outside the directory to {target}, too much to copy for each agent "
                f"(the links' copies are limited to {LINK_COPY_FILES} files and {LINK_COPY_BYTES >> 20} MiB); "
                "remove the link from the directory compared"
            )


def _measure(folder: str, files_limit: int, bytes_limit: int) -> tuple[int, int]:
    """Files and bytes under ``folder`` (links not followed), counted until either limit is passed."""
    files = size = 0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                info = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                files, size = files + 1, size + info.st_size
                if files > files_limit or size > bytes_limit:
                    return files, size
    return files, size


def _special_files(folder: str, names: list[str]) -> set[str]:
    """What a copied directory holds that is not a file, directory or link (pipes, sockets, devices): skipped."""
    skipped = set()
    for name in names:
        try:
            mode = os.lstat(os.path.join(folder, name)).st_mode
        except OSError:
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            skipped.add(name)
    return skipped


def contain_links(copy_root: Path, source_root: Path) -> list[str]:
    """Replace every link of the copy at ``copy_root`` (of the directory ``source_root``) that leads outside the
    copy, as the module says; returns the notices for the user (links left out). ``UnsafeLink`` for a link that
    cannot be replaced safely."""
    containment = _Containment(os.path.realpath(copy_root), os.path.realpath(source_root))
    containment.walk(containment.copy_root, containment.source_root)
    return containment.notices
