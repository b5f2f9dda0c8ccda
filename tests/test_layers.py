"""The layers of docs/design.md ("Layering"), enforced: no module imports a higher layer at import time; and the
shape the client split reached (no import cycle, no module over 600 lines, no call from session.py into a
connection, a prompt handed down once), each with a list of known exceptions that can only shrink (all empty);
and that start-up imports no v1 module (end of the file).

Every module under ``acp_session`` is parsed with ``ast``. The imports that run when it is imported are those at
module level, including inside ``try``/``if``/``with`` and class bodies, but not inside a function (a lazy import,
as the facade does for the conversation layer) and not under ``if TYPE_CHECKING:``.
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
            "acp_session._turn_state",
            "acp_session._counted_log",
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
            "acp_session.telemetry",
        ),
    ),
    # The folded state, chat events and turns; transcripts replay into a SessionState.
    ("conversation", ("acp_session.conversation", "acp_session.transcript", "acp_session.pages")),
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


# -- the shape the client split (issue 31) reached ------------------------------------------------------------------
#
# Three rules, each with an explicit KNOWN list of exceptions; its test fails on a new violation and on a stale
# entry (a known one that is gone), so the lists only shrink. The split of ClientConnection into an
# ``acp_session/client/`` package (builder, public connection, internal hub, decisions) emptied all three.


def imports_anywhere(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, lazy ones inside functions included; only those under ``if TYPE_CHECKING:``
    are left out (they never run)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If) and is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
        else:
            for child in ast.iter_child_nodes(node):
                visit(child)

    visit(tree)
    return found


def runtime_import_graph() -> dict[str, set[str]]:
    """Module -> the ``acp_session`` modules it imports at some point at run time. Importing ``a.b.c`` also runs
    the ``__init__`` of package ``a.b``, so that package counts as imported too (the facade ``acp_session`` is
    imported before anything else, and a module's own packages are already being imported: neither counts)."""
    modules = all_modules()
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in imports_anywhere(tree):
            for target in _import_targets(node, package, set(modules)):
                parts = target.split(".")
                for end in range(2, len(parts) + 1):
                    imported = ".".join(parts[:end])
                    own = module == imported or module.startswith(imported + ".")
                    if imported in modules and not own:
                        graph[module].add(imported)
                if target == ROOT and module != ROOT:
                    graph[module].add(ROOT)
    return graph


def _import_targets(node: ast.Import | ast.ImportFrom, package: str, known: set[str]) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]


def import_cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: set[frozenset[str]] = set()
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.add(frozenset(component))
    return cycles


# None today: the conversation layer builds on the client package and never the reverse (``start_conversation``
# gets ``Conversation.open`` from the facade, ``record_transcript`` wraps the transport in
# ``transport/recording.py``). Kept as a list so the two tests below read the same as the other rules'.
KNOWN_CYCLES: frozenset[frozenset[str]] = frozenset()


def test_no_import_cycle_among_the_modules() -> None:
    new = import_cycles(runtime_import_graph()) - KNOWN_CYCLES
    assert not new, "import cycles (lazy imports count, TYPE_CHECKING ones do not):\n" + "\n".join(
        " <-> ".join(sorted(cycle)) for cycle in new
    )


def test_known_cycles_are_still_there() -> None:
    stale = KNOWN_CYCLES - import_cycles(runtime_import_graph())
    assert not stale, "broken or changed, update KNOWN_CYCLES in tests/test_layers.py: " + "; ".join(
        " <-> ".join(sorted(cycle)) for cycle in stale
    )


def test_the_cycle_finder_finds_cycles_and_only_those() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}}
    assert import_cycles(graph) == {frozenset({"a", "b", "c"})}
    source = "if TYPE_CHECKING:\n    import x\ndef f():\n    import y\n    from . import z\n"
    found = [
        target
        for node in imports_anywhere(ast.parse(source))
        for target in _import_targets(node, "acp_session.rpc", set())
    ]
    assert found == ["y", "acp_session.rpc"]


MAX_MODULE_LINES = 600
GENERATED = "acp_session.schema"  # generated types (schema/generate.py): long by nature

# Modules over MAX_MODULE_LINES today: none. The client is a package, rpc.Connection's incoming requests and reader,
# SessionState's and Conversation's read sides, SessionState's entity rules, Conversation's turn routing, the hub's
# update route, the v1 adapter's incoming side and the --json renderer each have a module of their own. Kept as a
# list so the two tests below read the same as the other rules'.
KNOWN_LONG_MODULES: frozenset[str] = frozenset()


def long_modules() -> dict[str, int]:
    lengths = {module: len(path.read_text(encoding="utf-8").splitlines()) for module, path in all_modules().items()}
    return {
        module: lines
        for module, lines in lengths.items()
        if lines > MAX_MODULE_LINES and not (module == GENERATED or module.startswith(GENERATED + "."))
    }


def test_no_module_is_over_600_lines() -> None:
    new = {module: lines for module, lines in long_modules().items() if module not in KNOWN_LONG_MODULES}
    assert not new, f"modules over {MAX_MODULE_LINES} lines (split them by job): " + ", ".join(
        f"{module} ({lines})" for module, lines in sorted(new.items())
    )


def test_known_long_modules_are_still_long() -> None:
    stale = sorted(KNOWN_LONG_MODULES - set(long_modules()))
    assert not stale, "now short enough, remove from KNOWN_LONG_MODULES in tests/test_layers.py: " + ", ".join(stale)


SESSION_MODULE = "acp_session.session"

# session.py holds what a connection knows about each session (SessionTrack, TrackedPrompt, Limits, SentRequest),
# sans-IO: the connection's hub drives it and nothing in it calls a connection or imports the client. The command
# handle, ActiveSession, is in the client package (client/active_session.py) beside ClientConnection; its prompt
# goes down once (test_a_prompt_goes_down_once below). Calls found here, by method, with how many call sites:
KNOWN_SESSION_CALLS: dict[str, int] = {}


def session_calls_into_the_client(source: str) -> dict[str, int]:
    """Calls on the connection handle (``self._conn``, or a name assigned from it) by method name, plus one
    ``import acp_session.client`` entry per run-time import of the client module."""
    tree = ast.parse(source)
    aliases = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and _is_handle(node.value, set())
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    calls: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_handle(node.func.value, aliases):
            calls[node.func.attr] = calls.get(node.func.attr, 0) + 1
    package = SESSION_MODULE.rpartition(".")[0]
    for node in imports_anywhere(tree):
        for target in _import_targets(node, package, set(all_modules())):
            if target == "acp_session.client" or target.startswith("acp_session.client."):
                calls["import acp_session.client"] = calls.get("import acp_session.client", 0) + 1
    return calls


def _is_handle(node: ast.expr, aliases: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in aliases
    return isinstance(node, ast.Attribute) and node.attr == "_conn" and isinstance(node.value, ast.Name)


def test_session_calls_the_client_only_as_known() -> None:
    path = all_modules()[SESSION_MODULE]
    calls = session_calls_into_the_client(path.read_text(encoding="utf-8"))
    new = {name: count for name, count in calls.items() if count > KNOWN_SESSION_CALLS.get(name, 0)}
    assert not new, f"new calls from session.py back into the client: {new}"
    stale = {name: count for name, count in KNOWN_SESSION_CALLS.items() if calls.get(name, 0) < count}
    assert not stale, f"fewer calls than KNOWN_SESSION_CALLS in tests/test_layers.py lists, lower it: {stale}"


HANDLE_MODULE = "acp_session.client.active_session"


def test_a_prompt_goes_down_once() -> None:
    """``ActiveSession.send_tracked`` hands its prompt to the connection in one call (``SessionLink.send_prompt``),
    which checks, sends, tracks and settles it: no call comes back up to build, watch or expire it."""
    tree = ast.parse(all_modules()[HANDLE_MODULE].read_text(encoding="utf-8"))
    handle = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ActiveSession")
    send = next(n for n in handle.body if isinstance(n, ast.FunctionDef) and n.name == "send_tracked")
    assert session_calls_into_the_client(ast.unparse(send)) == {"send_prompt": 1}
    everywhere = session_calls_into_the_client(ast.unparse(tree))
    assert not {"prompt_exchange", "watch_prompt", "prompt_capabilities", "auth_error", "run_soon"} & set(everywhere)


def test_the_session_call_finder_sees_aliases_lambdas_and_lazy_imports() -> None:
    source = (
        "class S:\n"
        "    def f(self):\n"
        "        self._conn.a(1)\n"
        "        conn = self._conn\n"
        "        g = lambda e: conn.b(e)\n"
        "        self._conn.registry.cancel()\n"  # a call on something the client hands out: not counted
        "        other._conn.c()\n"
        "        from .client import ClientConnection\n"
    )
    assert session_calls_into_the_client(source) == {"a": 1, "b": 1, "c": 1, "import acp_session.client": 1}


# -- the v1 adapter loads only when an agent answers 1 (tests/test_lazy_v1.py checks it at run time) ----------------

V1_PACKAGES = ("acp_session.protocol.v1", "acp_session.schema.v1")
START_UP = (ROOT, "acp_session.conversation")  # `import acp_session`, and the conversation layer a v2 session uses


def import_time_path(start: str, wanted: tuple[str, ...]) -> list[str] | None:
    """A chain of import-time imports from ``start`` to a module under one of ``wanted`` (breadth first), or None."""
    graph: dict[str, list[str]] = {}
    for edge in all_edges():
        graph.setdefault(edge.importer, []).append(edge.imported)
    parents: dict[str, str | None] = {start: None}
    queue = [start]
    while queue:
        module = queue.pop(0)
        if any(module == w or module.startswith(w + ".") for w in wanted):
            chain = [module]
            while (parent := parents[chain[-1]]) is not None:
                chain.append(parent)
            return chain[::-1]
        # Importing a.b.c runs a.b's __init__ first: the package is imported too.
        parts = module.split(".")
        packages = [".".join(parts[:end]) for end in range(2, len(parts))]
        for imported in [*graph.get(module, []), *packages]:
            if imported not in parents:
                parents[imported] = module
                queue.append(imported)
    return None


def test_start_up_does_not_import_the_v1_adapter() -> None:
    for start in START_UP:
        chain = import_time_path(start, V1_PACKAGES)
        assert chain is None, "imported at start-up, make the import lazy: " + " -> ".join(chain or [])


def test_the_path_finder_names_the_chain() -> None:
    assert import_time_path("acp_session.protocol.v1.adapter", ("acp_session.schema.v1",)) == [
        "acp_session.protocol.v1.adapter",
        "acp_session.schema.v1.types",
    ]
    assert import_time_path("acp_session.client", ("acp_session.cli",)) is None
