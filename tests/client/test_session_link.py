"""The seam between the session handles and their connection (issue 19): ``SessionLink``.

(a) ``ClientConnection`` implements ``SessionLink``: statically (``mypy --strict acp_session`` checks
``_is_session_link`` at the end of client.py, and ``check_statically`` below when mypy is run on this file) and
at run time on a live connection (every member exists, of the same kind and arity).

(b) By ``ast``: acp_session/session.py and acp_session/conversation/*.py read no underscore-prefixed attribute
of anything but ``self``/``cls`` (dunder names are fine), so a handle or a conversation reaches its connection
only through named members. Two kinds of exception:

* a member of a class defined in the same module (an underscore name is private to its module, the Python
  convention): ``ActiveSession.__eq__`` reads ``other._conn``, ``SessionState``'s dispatch table names its
  ``_on_*`` handlers, ``Conversation.open`` sets up the ``conversation`` it made, streams end each other. Found
  mechanically: the name is a method, a ``self.<name>`` assignment or a ``__slots__`` entry of a class there.
  (A same-named member of another module's class would slip through; the names checked are the point.)
* ``CROSS_MODULE`` below, each explained; it can only shrink (a fixed entry fails the test until removed).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest

import acp_session
from acp_session import ClientConnection
from acp_session.client._hub import ConnectionHub
from acp_session.client.active_session import SessionLink
from acp_session.client.connection import hub_of
from acp_session.protocol.base import ClientSide
from tests.client.support import scripted

PACKAGE_DIR = Path(acp_session.__file__).parent
CHECKED = [PACKAGE_DIR / "session.py", *sorted((PACKAGE_DIR / "conversation").glob("*.py"))]

# (module file relative to acp_session/, receiver as written, attribute) -> why it stays.
CROSS_MODULE: dict[tuple[str, str, str], str] = {
    # streams.py is the Conversation's stream hub, split out of conversation.py for size. Opening the first
    # stream installs the hub by swapping Conversation._apply (the per-update fold, one attribute read in the
    # reader's hot path) and _streams; closing the last swaps them back. Named accessors would cost nothing
    # here, but would put a method call where the conversation's fold now has none to make.
    ("conversation/streams.py", "conversation", "_streams"): "the hub installed on the Conversation",
    ("conversation/streams.py", "conversation", "_apply"): "the fold swapped while streams are open",
    # open_stream: a stream opened after the conversation disconnected ends at once.
    ("conversation/streams.py", "conversation", "_disconnected"): "no stream opens on a dead conversation",
}


def _members(protocol: type) -> dict[str, Any]:
    """A Protocol's own members (Python 3.10+: no typing.get_protocol_members before 3.13)."""
    names = {n for n in vars(protocol) if not n.startswith("_")} | set(getattr(protocol, "__annotations__", {}))
    return {name: inspect.getattr_static(protocol, name) for name in sorted(names)}


def check_statically(hub: ConnectionHub) -> None:
    _: SessionLink = hub  # mypy: the connection's hub is a SessionLink


def test_session_link_names_a_small_documented_contract() -> None:
    members = _members(SessionLink)
    assert set(members) == {
        "connection",
        "interactions",
        "protocol",
        "rpc",
        "rpc_notify",
        "rpc_request",
        "send_prompt",
        "session_track",
        "session_tracks",
        "supports",
        "waiting_interactions",
    }
    for name, member in members.items():
        doc = (member.fget if isinstance(member, property) else member).__doc__
        assert doc and doc.strip(), f"SessionLink.{name} says why the session needs it"


@pytest.mark.anyio
async def test_the_hub_has_every_session_link_member(tmp_path: Path) -> None:
    async with scripted(tmp_path) as (connection, _):
        client = hub_of(connection)
        check_statically(client)
        for name, member in _members(SessionLink).items():
            assert hasattr(client, name), f"ConnectionHub lacks SessionLink.{name}"
            if isinstance(member, property):
                assert not callable(inspect.getattr_static(type(client), name, None)), name
                continue
            implementation = getattr(client, name)
            assert callable(implementation), name
            assert inspect.iscoroutinefunction(implementation) == inspect.iscoroutinefunction(member), name
            wanted = [p for p in inspect.signature(member).parameters.values() if p.name != "self"]
            given = list(inspect.signature(implementation).parameters.values())
            assert len(given) >= len(wanted), name
            for param, other in zip(wanted, given[: len(wanted)], strict=True):
                assert (param.default is inspect.Parameter.empty) == (other.default is inspect.Parameter.empty), name
            empty = inspect.Parameter.empty
            assert all(p.default is not empty or p.kind is p.VAR_POSITIONAL for p in given[len(wanted) :]), name


def test_the_public_connection_has_none_of_the_internal_members() -> None:
    """What sessions and the protocol adapter call lives on the hub; the class users hold has only its commands
    (so the API reference needs no list of names to hide)."""
    internal = {*_members(SessionLink), *_members(ClientSide)} - {"protocol", "rpc", "interactions"}
    internal |= {"file_written", "receive_update", "open_new_session", "open_resumed_session", "start_soon"}
    internal -= {"offer"}  # public too: what the connection offers
    public = {name for name in dir(ClientConnection) if not name.startswith("_")}
    assert not public & internal, sorted(public & internal)


def _defined_members(tree: ast.Module) -> set[str]:
    """Underscore names a class of this module defines: methods, ``self.x = ...`` targets, ``__slots__``."""
    names: set[str] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if isinstance(node.value, ast.Name) and node.value.id == "self":
                    names.add(node.attr)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == "__slots__":
                        names.update(
                            e.value
                            for e in ast.walk(node.value)
                            if isinstance(e, ast.Constant) and isinstance(e.value, str)
                        )
    return {name for name in names if name.startswith("_")}


def _private_reads(path: Path, root: Path = PACKAGE_DIR) -> list[tuple[str, str, str, int]]:
    """Every ``receiver._name`` in ``path`` whose receiver is not ``self``/``cls``, and not a member of a class
    defined in the same module: (module, receiver, name, line)."""
    tree = ast.parse(path.read_text(), str(path))
    own = _defined_members(tree)
    module = path.relative_to(root).as_posix()
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        if node.attr.startswith("__") and node.attr.endswith("__"):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        if node.attr in own:
            continue
        found.append((module, ast.unparse(node.value), node.attr, node.lineno))
    return found


def test_sessions_and_conversations_read_no_private_member_of_another_module() -> None:
    found = [item for path in CHECKED for item in _private_reads(path)]
    unexplained = [
        f"acp_session/{module}:{line}: {receiver}.{name}"
        for module, receiver, name, line in found
        if (module, receiver, name) not in CROSS_MODULE
    ]
    assert not unexplained, "private members of another module's object (name them, e.g. in SessionLink):\n" + (
        "\n".join(unexplained)
    )
    still_used = {(module, receiver, name) for module, receiver, name, _ in found}
    stale = sorted(set(CROSS_MODULE) - still_used)
    assert not stale, f"no longer read, remove from CROSS_MODULE: {stale}"


def test_the_check_catches_a_private_call_into_the_connection(tmp_path: Path) -> None:
    (tmp_path / "session.py").write_text(
        "class ActiveSession:\n"
        "    __slots__ = ('_conn', '_session_id')\n"
        "    def track(self):\n"
        "        return self._conn._track(self._session_id)\n"
        "    def __eq__(self, other):\n"
        "        return other._conn is self._conn and other.__class__ is self.__class__\n"
    )
    reads = _private_reads(tmp_path / "session.py", root=tmp_path)
    assert [(receiver, name) for _, receiver, name, _ in reads] == [("self._conn", "_track")]
