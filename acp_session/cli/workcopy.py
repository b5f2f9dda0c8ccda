"""A private copy of the user's working directory for one agent of ``acp-session compare``, and what the agent
changed in it (a diffstat).

A git repository gets a detached ``git worktree`` at HEAD with the user's uncommitted changes and untracked files
copied over; any other directory a plain copy; either way, a symbolic link that would lead out of the copy is
replaced (``copy_links``). The user's own files are only read. What changed is found by
comparing the copy's files before and after the turn (so a git and a plain copy are measured alike, and no
commit is ever made in the user's repository).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .copy_links import contain_links

__all__ = ["FileChange", "WorkCopy", "diffstat", "snapshot"]

TEXT_LIMIT = 1_000_000
"""Files up to this many bytes are compared line by line; bigger ones only as changed or not."""

Snapshot = dict[str, tuple[str, bytes | None]]
"""Relative path -> (content hash, the bytes when small enough to count lines)."""


@dataclass(frozen=True)
class FileChange:
    path: str
    status: str  # added, deleted, modified
    added: int
    removed: int
    binary: bool = False


def snapshot(root: Path) -> Snapshot:
    """Every regular file and symbolic link under ``root`` (``.git`` left out), by relative path; a link counts
    as the one line ``symlink -> TARGET``, so a link made, removed or pointed elsewhere is a change too."""
    found: Snapshot = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*files, *dirs]:
            path = Path(folder) / name
            try:
                if path.is_symlink():
                    data = f"symlink -> {os.readlink(path)}\n".encode("utf-8", "surrogateescape")
                elif name in files and path.is_file():
                    data = path.read_bytes()
                else:
                    continue
            except OSError:
                continue
            key = path.relative_to(root).as_posix()
            found[key] = (hashlib.sha256(data).hexdigest(), data if len(data) <= TEXT_LIMIT else None)
    return found


def _lines(data: bytes | None) -> list[str] | None:
    if data is None or b"\0" in data:
        return None
    return data.decode("utf-8", "replace").splitlines()


def diffstat(before: Snapshot, after: Snapshot) -> list[FileChange]:
    """The files added, deleted or modified between two snapshots, with line counts (sorted by path)."""
    changes: list[FileChange] = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old is not None and new is not None and old[0] == new[0]:
            continue
        status = "added" if old is None else "deleted" if new is None else "modified"
        old_lines = [] if old is None else _lines(old[1])
        new_lines = [] if new is None else _lines(new[1])
        if old_lines is None or new_lines is None:
            changes.append(FileChange(path, status, 0, 0, binary=True))
            continue
        added = removed = 0
        for line in difflib.unified_diff(old_lines, new_lines, lineterm="", n=0):
            if line.startswith("+") and not line.startswith("+++"):
                added += 1
            elif line.startswith("-") and not line.startswith("---"):
                removed += 1
        changes.append(FileChange(path, status, added, removed))
    return changes


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, check=False)


def repository_root(directory: Path) -> Path | None:
    """The git work tree ``directory`` is in, or None (not a repository, or no git)."""
    if shutil.which("git") is None:
        return None
    done = _git(directory, "rev-parse", "--show-toplevel")
    if done.returncode != 0 or _git(directory, "rev-parse", "--verify", "-q", "HEAD").returncode != 0:
        return None  # no repository, or one without a commit to check out
    return Path(os.fsdecode(done.stdout.strip()))


class WorkCopy:
    """``directory``'s copy under ``parent``: ``path`` is where the agent works (the same place inside the
    copy as ``directory`` is inside its repository); ``remove()`` deletes it (and the worktree's entry)."""

    def __init__(self, directory: Path, parent: Path, name: str) -> None:
        self.source = directory.resolve()
        self.repo = repository_root(self.source)
        self.root = parent / name
        if self.repo is not None:
            done = _git(self.repo, "worktree", "add", "--detach", "-q", str(self.root), "HEAD")
            if done.returncode != 0:
                raise OSError(f"git worktree add failed: {done.stderr.decode(errors='replace').strip()}")
            self.path = self.root / self.source.relative_to(self.repo)
            self.kind = "git worktree"
        else:
            self.path = self.root
            self.kind = "copy"
        try:
            if self.repo is not None:
                self._copy_uncommitted(self.repo)
            else:
                shutil.copytree(self.source, self.root, symlinks=True)
            # Links kept as links may lead out of the copy, into the user's real files (cli/copy_links.py).
            self.notices = contain_links(self.root, self.repo or self.source)
        except BaseException:
            self.remove()
            raise
        self.before = snapshot(self.path)

    def _copy_uncommitted(self, repo: Path) -> None:
        """The user's modified, deleted and untracked (not ignored) files, as they are now, into the worktree."""
        listed = _git(repo, "status", "--porcelain", "-z", "--untracked-files=all").stdout.split(b"\0")
        entries = iter(listed)
        for entry in entries:
            if len(entry) < 4:
                continue
            code, name = entry[:2].decode(), os.fsdecode(entry[3:])
            if code[0] in "RC":
                next(entries, None)  # a rename's source path follows
            source, target = repo / name, self.root / name
            if source.is_file() or source.is_symlink():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target, follow_symlinks=False)
            elif not source.exists() and target.exists():
                target.unlink()

    def changes(self) -> list[FileChange]:
        return diffstat(self.before, snapshot(self.path))

    def remove(self) -> None:
        if self.repo is not None:
            _git(self.repo, "worktree", "remove", "--force", str(self.root))
            _git(self.repo, "worktree", "prune")
        shutil.rmtree(self.root, ignore_errors=True)
