"""The layers of docs/design.md ("Layering"), enforced: no module imports a higher layer at import time.

Every module under ``acp_session`` is parsed with ``ast``. The imports that run when it is imported are those at
module level, including inside ``try``/``if``/``with`` and class bodies, but not inside a function (a lazy import,
as ``ClientConnection.start_conversation`` does for the conversation layer) and not under ``if TYPE_CHECKING:``.
Relative imports are resolved; ``from package import name`` is an import of ``package.name`` when that is a
module, else of ``package``. The packages a dotted import passes through (``acp_session`` for every import) are
not counted: they are always imported first, and each is in the layer of the modules below it, except the
top-level facade, which is why it must itself stay light (tests/test_package.py).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import acp_session

ROOT = "acp_session"
PACKAGE_DIR = Path(acp_session.__file__).parent

# Layer index → (name, module prefixes). A prefix covers the module and everything under it, except ROOT, which
# covers only the package's own ``__init__`` (the facade). A module may import its own layer and lower ones.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Usable by all: errors, the generated types and what they need, encoding.
    (
        "foundation",
        (
            "acp_session.errors",
            "acp_session.client_errors",
            "acp_session.codec",
            "acp_session._schema_runtime",
            "acp_session._version",
            "acp_session.update_kinds",
            "acp_session.schema",
        ),
    ),
    # Bytes and frames; knows no JSON-RPC.
    ("transport", ("acp_session.transport",)),
    # Agents by name: a registry id resolved to a command (argv, env) for this machine; knows no protocol.
    ("registry", ("acp_session.registry",)),
    # The JSON-RPC 2.0 peer; knows no ACP method and no generated type.
    ("rpc", ("acp_session.rpc",)),
    # One adapter per protocol version: wire ⇄ model (the v2 types).
    ("protocol", ("acp_session.protocol",)),
    # The client, its sessions and what answers the agent's requests.
    (
        "client",
        (
            "acp_session.client",
            "acp_session.session",
            "acp_session.interactions",
            "acp_session.auth",
            "acp_session.providers",
            "acp_session.mcp",
        ),
    ),
    # The folded state, chat events and turns; transcripts replay into a SessionState.
    ("conversation", ("acp_session.conversation", "acp_session.transcript")),
    # acp_session/__init__.py: the public facade over the client (the conversation layer is imported on use).
    ("package", (ROOT,)),
    # The command line.
    ("cli", ("acp_session.cli", "acp_session.__main__")),
)

# Violations present today, each (importer, imported) with what must move where. The list can only shrink:
# test_known_violations_are_still_there fails when one is fixed, so its entry is removed with the fix.
KNOWN_VIOLATIONS: frozenset[tuple[str, str]] = frozenset()


def layer_of(module: str) -> int:
    matches = [
        (len(prefix), index)
        for index, (_, prefixes) in enumerate(LAYERS)
        for prefix in prefixes
        if module == prefix or (prefix != ROOT and module.startswith(prefix + "."))
    ]
    if not matches:
        raise LookupError(f"{module} is in no layer: add it to LAYERS in tests/test_layers.py")
    return max(matches)[1]


def describe(module: str) -> str:
    return f"{module} ({LAYERS[layer_of(module)][0]})"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py")) if "__pycache__" not in path.parts}


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_time_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is imported."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return  # runs when called, not when imported
        elif isinstance(node, ast.If) and is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
        elif (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.UnaryOp)
            and isinstance(node.test.op, ast.Not)
            and is_type_checking(node.test.operand)
        ):
            for child in node.body:
                visit(child)
        else:
            for child in ast.iter_child_nodes(node):
                visit(child)

    visit(tree)
    return found


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    path: Path
    line: int

    def __str__(self) -> str:
        where = self.path.relative_to(PACKAGE_DIR.parent)
        return f"{where}:{self.line}: {describe(self.importer)} imports {describe(self.imported)}"


def imports_of(module: str, path: Path, tree: ast.Module, known: set[str]) -> list[Edge]:
    """The ``acp_session`` modules this module imports at import time, relative imports resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    edges: list[Edge] = []
    for node in import_time_imports(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.append(submodule if submodule in known else base)
        edges.extend(
            Edge(module, target, path, node.lineno)
            for target in targets
            if target == ROOT or target.startswith(ROOT + ".")
        )
    return edges


def all_edges() -> list[Edge]:
    modules = all_modules()
    known = set(modules)
    edges: list[Edge] = []
    for module, path in modules.items():
        edges.extend(imports_of(module, path, ast.parse(path.read_text(encoding="utf-8"), str(path)), known))
    return edges


def upward(edges: list[Edge]) -> list[Edge]:
    return [edge for edge in edges if layer_of(edge.imported) > layer_of(edge.importer)]


def test_every_module_is_in_a_layer() -> None:
    unplaced = []
    for module in all_modules():
        try:
            layer_of(module)
        except LookupError as error:
            unplaced.append(str(error))
    assert not unplaced, "\n".join(unplaced)


def test_every_import_resolves_to_a_module() -> None:
    known = set(all_modules())
    unknown = [str(edge) for edge in all_edges() if edge.imported not in known]
    assert not unknown, "imports of no module under acp_session:\n" + "\n".join(unknown)


def test_no_module_imports_a_higher_layer_at_import_time() -> None:
    new = [str(edge) for edge in upward(all_edges()) if (edge.importer, edge.imported) not in KNOWN_VIOLATIONS]
    assert not new, "imports of a higher layer at import time (make them lazy, or move the code down):\n" + "\n".join(
        new
    )


def test_known_violations_are_still_there() -> None:
    """KNOWN_VIOLATIONS can only shrink: a fixed one must leave the list."""
    present = {(edge.importer, edge.imported) for edge in upward(all_edges())}
    fixed = sorted(KNOWN_VIOLATIONS - present)
    assert not fixed, "fixed, remove from KNOWN_VIOLATIONS in tests/test_layers.py: " + ", ".join(
        f"{importer} -> {imported}" for importer, imported in fixed
    )


def edges_of_source(source: str, module: str = "acp_session.rpc.core", *, init: bool = False) -> set[str]:
    path = (
        PACKAGE_DIR.joinpath(*module.split(".")[1:], "__init__.py")
        if init
        else PACKAGE_DIR.joinpath(*module.split(".")[1:]).with_suffix(".py")
    )
    return {edge.imported for edge in imports_of(module, path, ast.parse(source), set(all_modules()))}


def test_the_collector_counts_only_what_runs_at_import_time() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "import typing\n"
        "from ..errors import AcpError\n"
        "try:\n"
        "    from ..codec import decoder\n"
        "except ImportError:\n"
        "    import acp_session.transport.framing\n"
        "if TYPE_CHECKING:\n"
        "    from ..client import ClientConnection\n"
        "else:\n"
        "    from ..transport import base\n"
        "if typing.TYPE_CHECKING:\n"
        "    from ..session import ActiveSession\n"
        "if not TYPE_CHECKING:\n"
        "    from ..protocol import v2\n"
        "class C:\n"
        "    from .. import schema\n"
        "    def method(self):\n"
        "        from ..conversation import Conversation\n"
        "def function():\n"
        "    import acp_session.cli\n"
    )
    assert edges_of_source(source) == {
        "acp_session.errors",
        "acp_session.codec",
        "acp_session.transport.framing",
        "acp_session.transport.base",
        "acp_session.protocol.v2",
        "acp_session.schema",
    }


def test_relative_imports_resolve_from_the_package() -> None:
    # In a package's __init__, ``.`` is the package itself; in a module, its parent.
    assert edges_of_source("from . import core\n", "acp_session.rpc", init=True) == {"acp_session.rpc.core"}
    assert edges_of_source("from . import core\n", "acp_session.rpc.connection") == {"acp_session.rpc.core"}
    assert edges_of_source("from ...schema import types\n", "acp_session.protocol.v1.adapter") == {
        "acp_session.schema.types"
    }
    assert edges_of_source("from . import __version__\n", "acp_session.client") == {ROOT}


def test_a_violation_names_both_modules_and_layers() -> None:
    edges = imports_of(
        "acp_session.rpc.core",
        PACKAGE_DIR / "rpc" / "core.py",
        ast.parse("from ..session import ActiveSession\n"),
        set(all_modules()),
    )
    assert [str(edge) for edge in upward(edges)] == [
        "acp_session/rpc/core.py:1: acp_session.rpc.core (rpc) imports acp_session.session (client)"
    ]
