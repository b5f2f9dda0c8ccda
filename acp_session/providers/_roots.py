"""Which directories a session may touch: its cwd, its additional directories and the embedder's roots.

Every root is stored resolved (``os.path.realpath``) so that a path, once resolved the same way, can be checked
with a plain prefix comparison; a symlink or ``..`` can then never lead outside without being seen.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from acp_session.errors import ResourceNotFound

__all__ = ["SessionRoots", "inside", "resolve_root", "root_of", "unknown_session"]


def resolve_root(path: str | os.PathLike[str]) -> str:
    """The resolved form of an allowed directory; a relative one is an embedder mistake, so it raises ValueError."""
    text = os.fspath(path)
    if not os.path.isabs(text):
        raise ValueError(f"allowed directories must be absolute paths, got {text!r}")
    return os.path.realpath(text)


def inside(path: str, root: str) -> bool:
    """True if the resolved ``path`` is ``root`` or lies below it (both already resolved)."""
    if path == root:
        return True
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path.startswith(prefix)


def unknown_session(session_id: str) -> ResourceNotFound:
    """-32002, which the schema's ErrorCode names for "a given resource, such as a session or file, was not found"."""
    return ResourceNotFound(message=f"unknown or closed session: {session_id!r}", data={"sessionId": session_id})


class SessionRoots:
    """The allowed directories of each open session, plus the embedder's roots shared by all of them."""

    def __init__(self, roots: Sequence[str | os.PathLike[str]]) -> None:
        self.shared: tuple[str, ...] = tuple(resolve_root(root) for root in roots)
        self._sessions: dict[str, tuple[str, tuple[str, ...]]] = {}

    def open(self, session_id: str, cwd: str, additional_directories: Sequence[str]) -> None:
        """Register (or replace, as after ``session/load``) the directories of ``session_id``."""
        resolved_cwd = resolve_root(cwd)
        extra = tuple(resolve_root(directory) for directory in additional_directories)
        self._sessions[session_id] = (resolved_cwd, (resolved_cwd, *extra, *self.shared))

    def close(self, session_id: str) -> bool:
        """Forget ``session_id``; False if it was not open."""
        return self._sessions.pop(session_id, None) is not None

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    def cwd(self, session_id: str) -> str:
        """The session's resolved working directory; -32002 for an unknown or closed session."""
        try:
            return self._sessions[session_id][0]
        except KeyError:
            raise unknown_session(session_id) from None

    def roots(self, session_id: str) -> tuple[str, ...]:
        """The session's resolved allowed directories; -32002 for an unknown or closed session."""
        try:
            return self._sessions[session_id][1]
        except KeyError:
            raise unknown_session(session_id) from None


def root_of(resolved: str, roots: Sequence[str]) -> str | None:
    """The deepest allowed root that contains ``resolved`` (None if none does)."""
    best: str | None = None
    for root in roots:
        if inside(resolved, root) and (best is None or len(root) > len(best)):
            best = root
    return best
