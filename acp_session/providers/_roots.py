"""Which directories a session may touch: its cwd, its additional directories and the embedder's roots.

Every root is stored resolved (``os.path.realpath``) so that a path, once resolved the same way, can be checked
with a plain prefix comparison; a symlink or ``..`` can then never lead outside without being seen.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from acp_session._counted_log import CountedLog
from acp_session.errors import InvalidParams, ResourceNotFound

__all__ = ["SessionRoots", "inside", "resolve_requested", "resolve_root", "root_of", "unknown_session"]

_log = logging.getLogger("acp_session.providers")


def resolve_root(path: str | os.PathLike[str]) -> str:
    """The resolved form of an allowed directory; a relative one is an embedder mistake, so it raises ValueError."""
    text = os.fspath(path)
    if not os.path.isabs(text):
        raise ValueError(f"allowed directories must be absolute paths, got {text!r}")
    return os.path.realpath(text)


def resolve_requested(path: str, field: str, log: CountedLog) -> str:
    """The resolved form of a path the agent asked for; -32602 if resolving it fails.

    ``os.path.realpath`` raises when the disk changes under it (a symlink swapped for a file between its
    ``lstat`` and ``readlink``: EINVAL) or a link cannot be read (``/proc/PID/exe`` of a zombie). That is the
    agent's request racing or probing the disk, not a client fault: one log line (then counted, in ``log``,
    the provider's), never a traceback.
    """
    try:
        return os.path.realpath(path)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        log.warning(
            f"refused {field}s that could not be resolved",
            "refused %s %r: it could not be resolved (%s)",
            field,
            path,
            reason,
            logger=_log,
        )
        raise InvalidParams(
            message=f"{path} could not be resolved (it changed while it was being checked, or a link in it "
            f"cannot be read: {reason})",
            data={field: path},
        ) from None


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
        self.log = CountedLog(_log, "the agent")
        """The provider's refusals that can come once per request (``resolve_requested``), counted."""
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
