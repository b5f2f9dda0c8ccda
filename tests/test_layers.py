"""The layers of docs/design.md ("Layering"), enforced for both packages, the library ``acp_session`` and the
conformance suite ``acp_conformance`` (its source under conformance/): no module imports a higher layer of its
package at import time, no import cycle at run time (in either package, or between them), no circle of modules
that name each other only for types but the known ones (docs/design.md, "Type-only circles") and no module over
600 lines (the generated schema aside). For the library also the shape the client split reached (no call from
session.py into a connection, a prompt handed down once) and that start-up imports no v1 module (end of the file);
for the conformance suite, that the reference agent and the runner never import each other and that each check
sits in its rule area's module. Each rule has a list of known exceptions that can only shrink (all empty but the
type-only circles).

Every module under ``acp_session`` and ``acp_conformance`` is parsed with ``ast``. The imports that run when it is
imported are those at module level, including inside ``try``/``if``/``with`` and class bodies, but not inside a
function (a lazy import, as the facade does for the conversation layer), not under ``if TYPE_CHECKING:`` and not
under ``if __name__ == "__main__":`` (that runs only as a program, a module of another name).
Relative imports are resolved; ``from package import name`` is an import of ``package.name`` when that is a
module, else of ``package``. The packages a dotted import passes through (``acp_session`` for every import) are
not counted: they are always imported first, and each is in the layer of the modules below it, except the
top-level facade, which is why it must itself stay light (tests/test_package.py).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

import acp_conformance
import acp_session
from acp_conformance.runner.checks import CHECK_SETS

ROOT = "acp_session"
PACKAGE_DIR = Path(acp_session.__file__).parent

Layers = tuple[tuple[str, tuple[str, ...]], ...]

# Layer index → (name, module prefixes). A prefix covers the module and everything under it, except ROOT, which
# covers only the package's own ``__init__`` (the facade). A module may import its own layer and lower ones.
LAYERS: Layers = (
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
            "acp_session._lazy",
            "acp_session._opener",
            "acp_session.schema",
        ),
    ),
    # Bytes and frames; knows no JSON-RPC.
    ("transport", ("acp_session.transport",)),
    # The server side of the remote transports: any ACP endpoint over Streamable HTTP and WebSocket (sans-IO rules,
    # a connection's frames and streams, a thin ASGI app and hypercorn driver); knows no JSON-RPC peer, only where
    # each message goes.
    ("server", ("acp_session.server",)),
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
    # The host: an agent's sessions kept (and stored) while clients come and go, served to them; it drives the client
    # and conversation layers and serves through acp_session.server, below it.
    ("host", ("acp_session.host",)),
    # acp_session/__init__.py: the public facade over the client (the conversation layer is imported on use).
    ("package", (ROOT,)),
    # The command line.
    ("cli", ("acp_session.cli", "acp_session.__main__")),
)

CONFORMANCE = "acp_conformance"

# The conformance suite: the reference agent (``agent/``) and the runner with its client mode (``runner/``,
# ``client_mode/``) are two stacks that never import each other (test_the_reference_agent_and_the_runner_are_apart);
# listed one after the other, bottom up.
CONFORMANCE_LAYERS: Layers = (
    # The reference agent's parts that know no protocol method: configuration, the workspace, version choice,
    # v1's wire shapes, the MCP client, the session store.
    (
        "agent foundation",
        (
            CONFORMANCE,
            "acp_conformance.agent",
            "acp_conformance.agent.config",
            "acp_conformance.agent.workspace",
            "acp_conformance.agent.negotiation",
            "acp_conformance.agent.v1_wire",
            "acp_conformance.agent.mcp_client",
            "acp_conformance.agent.sessions",
        ),
    ),
    # What a prompt makes the agent do: the scenario engine and the scenarios.
    ("agent scenarios", ("acp_conformance.agent.scenarios",)),
    # Below the server, which they serve: the sessions a --listen server shares, the Preview methods, the v1 front.
    (
        "agent fronts",
        ("acp_conformance.agent.shared", "acp_conformance.agent.preview_methods", "acp_conformance.agent.v1_front"),
    ),
    # One handler per v2 method on a connection.
    ("agent server", ("acp_conformance.agent.server",)),
    # The server with every optional capability, or with a defect in one handler (--broken).
    ("agent variants", ("acp_conformance.agent.variants",)),
    # --listen: the server's sessions on the library's server (acp_session.server), the remote --broken modes.
    ("agent remote", ("acp_conformance.agent.remote_modes", "acp_conformance.agent.listen")),
    ("agent command line", ("acp_conformance.agent.__main__",)),
    # The runner's wire: an agent's lines recorded as frames, the client's part, the remote probes.
    (
        "runner wire",
        (
            "acp_conformance.runner",
            "acp_conformance.runner.outcomes",
            "acp_conformance.runner.frames",
            "acp_conformance.runner.excerpt",
            "acp_conformance.runner.wire",
            "acp_conformance.runner.client_calls",
            "acp_conformance.runner.probe",
            "acp_conformance.runner.remote_probe",
            "acp_conformance.runner.remote_agent",
        ),
    ),
    # What is judged and how it counts: scenario files, tiers, the official kit's ids, baselines.
    (
        "runner tables",
        (
            "acp_conformance.runner.scenarios",
            "acp_conformance.runner.tiers",
            "acp_conformance.runner.kit",
            "acp_conformance.runner.baseline",
            "acp_conformance.runner.selection",
        ),
    ),
    # The checks, by protocol version and rule area, and the remote transports' own.
    (
        "runner checks",
        ("acp_conformance.runner.registry", "acp_conformance.runner.checks", "acp_conformance.runner.checks_remote"),
    ),
    # A run of the checks, its verdict and its reports.
    (
        "runner run",
        (
            "acp_conformance.runner.run",
            "acp_conformance.runner.remote_run",
            "acp_conformance.runner.verdict",
            "acp_conformance.runner.text",
            "acp_conformance.runner.report",
            "acp_conformance.runner.html_report",
        ),
    ),
    # Clients under test: a scripted agent, the subject's leash, the judging of its runs (judged by the runner's
    # tiers and verdict).
    ("client mode", ("acp_conformance.client_mode",)),
    ("runner command line", ("acp_conformance.runner.__main__", "acp_conformance.client_mode.cli")),
)


@dataclass(frozen=True)
class Package:
    """One of the two packages: its import name, its directory, its layers, what the size rule leaves out."""

    root: str
    directory: Path
    layers: Layers
    generated: tuple[str, ...] = ()  # prefixes of generated modules (the size rule leaves them out)

    def owns(self, module: str) -> bool:
        return module == self.root or module.startswith(self.root + ".")


LIBRARY = Package(ROOT, PACKAGE_DIR, LAYERS, generated=("acp_session.schema",))
SUITE = Package(CONFORMANCE, Path(acp_conformance.__file__).parent, CONFORMANCE_LAYERS)
PACKAGES = (LIBRARY, SUITE)
BOTH = pytest.mark.parametrize("package", PACKAGES, ids=lambda package: package.root)


def package_of(module: str) -> Package:
    return next(package for package in PACKAGES if package.owns(module))


# Violations present today, each (importer, imported) with what must move where. The list can only shrink:
# test_known_violations_are_still_there fails when one is fixed, so its entry is removed with the fix.
KNOWN_VIOLATIONS: frozenset[tuple[str, str]] = frozenset()


def layer_of(module: str) -> int:
    package = package_of(module)
    matches = [
        (len(prefix), index)
        for index, (_, prefixes) in enumerate(package.layers)
        for prefix in prefixes
        if module == prefix or (prefix != package.root and module.startswith(prefix + "."))
    ]
    if not matches:
        raise LookupError(f"{module} is in no layer: add it to the layers of {package.root} in tests/test_layers.py")
    return max(matches)[1]


def describe(module: str) -> str:
    return f"{module} ({package_of(module).layers[layer_of(module)][0]})"


def module_name(path: Path, package: Package = LIBRARY) -> str:
    parts = path.relative_to(package.directory.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules(package: Package = LIBRARY) -> dict[str, Path]:
    return {
        module_name(path, package): path
        for path in sorted(package.directory.rglob("*.py"))
        if "__pycache__" not in path.parts
    }


def every_module() -> dict[str, Path]:
    return {module: path for package in PACKAGES for module, path in all_modules(package).items()}


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"``: its body runs only when the module is the program (then named ``__main__``)."""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def import_time_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is imported."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return  # runs when called, not when imported
        elif isinstance(node, ast.If) and (is_type_checking(node.test) or is_main_guard(node.test)):
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
        where = self.path.relative_to(package_of(self.importer).directory.parent)
        return f"{where}:{self.line}: {describe(self.importer)} imports {describe(self.imported)}"


def imports_of(module: str, path: Path, tree: ast.Module, known: set[str]) -> list[Edge]:
    """The modules of its own package this module imports at import time, relative imports resolved."""
    own = package_of(module)
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
        edges.extend(Edge(module, target, path, node.lineno) for target in targets if own.owns(target))
    return edges


def all_edges(package: Package = LIBRARY) -> list[Edge]:
    modules = all_modules(package)
    known = set(modules)
    edges: list[Edge] = []
    for module, path in modules.items():
        edges.extend(imports_of(module, path, ast.parse(path.read_text(encoding="utf-8"), str(path)), known))
    return edges


def upward(edges: list[Edge]) -> list[Edge]:
    return [edge for edge in edges if layer_of(edge.imported) > layer_of(edge.importer)]


@BOTH
def test_every_module_is_in_a_layer(package: Package) -> None:
    unplaced = []
    for module in all_modules(package):
        try:
            layer_of(module)
        except LookupError as error:
            unplaced.append(str(error))
    assert not unplaced, "\n".join(unplaced)


@BOTH
def test_every_import_resolves_to_a_module(package: Package) -> None:
    known = set(all_modules(package))
    unknown = [str(edge) for edge in all_edges(package) if edge.imported not in known]
    assert not unknown, f"imports of no module under {package.root}:\n" + "\n".join(unknown)


@BOTH
def test_no_module_imports_a_higher_layer_at_import_time(package: Package) -> None:
    edges = upward(all_edges(package))
    new = [str(edge) for edge in edges if (edge.importer, edge.imported) not in KNOWN_VIOLATIONS]
    assert not new, "imports of a higher layer at import time (make them lazy, or move the code down):\n" + "\n".join(
        new
    )


def test_known_violations_are_still_there() -> None:
    """KNOWN_VIOLATIONS can only shrink: a fixed one must leave the list."""
    present = {(edge.importer, edge.imported) for package in PACKAGES for edge in upward(all_edges(package))}
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
        "if __name__ == '__main__':\n"
        "    from ..client import ClientBuilder\n"
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
    probe = all_modules(SUITE)["acp_conformance.runner.probe"]
    edges = imports_of(
        "acp_conformance.runner.probe", probe, ast.parse("from .checks import CHECKS\n"), set(all_modules(SUITE))
    )
    assert [str(edge) for edge in upward(edges)] == [
        "acp_conformance/runner/probe.py:1: acp_conformance.runner.probe (runner wire) imports "
        "acp_conformance.runner.checks (runner checks)"
    ]


# -- the shape the client split (issue 31) reached ------------------------------------------------------------------
#
# Three rules, each with an explicit KNOWN list of exceptions; its test fails on a new violation and on a stale
# entry (a known one that is gone), so the lists only shrink. The split of ClientConnection into an
# ``acp_session/client/`` package (builder, public connection, internal hub, decisions) emptied all three.


def imports_anywhere(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, lazy ones inside functions included; only those under ``if TYPE_CHECKING:``
    are left out (they never run), and those under ``if __name__ == "__main__":`` (they run in a module of
    another name)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If) and (is_type_checking(node.test) or is_main_guard(node.test)):
            for child in node.orelse:
                visit(child)
        else:
            for child in ast.iter_child_nodes(node):
                visit(child)

    visit(tree)
    return found


def runtime_import_graph() -> dict[str, set[str]]:
    """Module -> the modules (of both packages) it imports at some point at run time. Importing ``a.b.c`` also
    runs the ``__init__`` of package ``a.b``, so that package counts as imported too (a top-level package is
    imported before anything else, and a module's own packages are already being imported: neither counts, except
    a plain import of the facade ``acp_session``, whose modules are then imported too)."""
    modules = every_module()
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
                if target in (ROOT, CONFORMANCE) and module != target:
                    graph[module].add(target)
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


def imports_named(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement a type checker follows: those under ``if TYPE_CHECKING:`` too (only the
    ``if __name__ == "__main__":`` blocks are left out)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If) and is_main_guard(node.test):
            for child in node.orelse:
                visit(child)
        else:
            for child in ast.iter_child_nodes(node):
                visit(child)

    visit(tree)
    return found


def type_graph() -> dict[str, set[str]]:
    """Module -> the modules of both packages it names in an import, lazy and ``TYPE_CHECKING`` ones included."""
    modules = every_module()
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in imports_named(tree):
            for target in _import_targets(node, package, set(modules)):
                if target in modules and target != module and not module.startswith(target + "."):
                    graph[module].add(target)
    return graph


# Circles of modules that name each other only for types (``TYPE_CHECKING``) or through a lazy import: no cycle at
# run time, but no order either. Each is kept for the reason docs/design.md gives ("Type-only circles"); a new one
# is broken with a small Protocol or a lower module holding the shared types, or added here with its line there.
KNOWN_TYPE_CIRCLES: frozenset[frozenset[str]] = frozenset(
    {
        frozenset({"acp_session.cli.app", "acp_session.cli.asking", "acp_session.cli.daily"}),
        frozenset(
            {
                "acp_session.conversation.state",
                "acp_session.conversation.state_rules",
                "acp_session.conversation.state_view",
                "acp_session.conversation.subagent",
            }
        ),
        frozenset(
            {
                "acp_session.transport.remote.client",
                "acp_session.transport.remote.dialer",
                "acp_session.transport.remote.http",
                "acp_session.transport.remote.websocket",
            }
        ),
        frozenset(
            {
                "acp_session.client",
                "acp_session.client._hub",
                "acp_session.client.active_session",
                "acp_session.client.builder",
                "acp_session.client.connection",
                "acp_session.client.opening",
                "acp_session.client.reconnect",
                "acp_session.conversation.conversation",
                "acp_session.conversation.recovery",
                "acp_session.conversation.routing",
                "acp_session.conversation.streams",
                "acp_session.conversation.view",
            }
        ),
        frozenset({"acp_session.server.app", "acp_session.server.websocket"}),
    }
)


def test_no_new_type_only_circle() -> None:
    new = import_cycles(type_graph()) - KNOWN_TYPE_CIRCLES
    assert not new, "modules that name each other (TYPE_CHECKING and lazy imports count):\n" + "\n".join(
        " <-> ".join(sorted(circle)) for circle in new
    )


def test_known_type_circles_are_still_there() -> None:
    stale = KNOWN_TYPE_CIRCLES - import_cycles(type_graph())
    assert not stale, "broken or changed, update KNOWN_TYPE_CIRCLES and docs/design.md: " + "; ".join(
        " <-> ".join(sorted(circle)) for circle in stale
    )


MAX_MODULE_LINES = 600

# Modules over MAX_MODULE_LINES today: none, in either package (the generated types of acp_session.schema are long
# by nature, schema/generate.py, and left out). The client is a package, rpc.Connection's incoming requests and
# reader, SessionState's and Conversation's read sides, SessionState's entity rules, Conversation's turn routing, the
# hub's update route, the v1 adapter's incoming side and the --json renderer each have a module of their own; the
# conformance checks have one module per protocol version and rule area, the runner's probe its wire apart. Kept as
# a list so the two tests below read the same as the other rules'.
KNOWN_LONG_MODULES: frozenset[str] = frozenset()


def long_modules() -> dict[str, int]:
    lengths = {module: len(path.read_text(encoding="utf-8").splitlines()) for module, path in every_module().items()}
    return {
        module: lines
        for module, lines in lengths.items()
        if lines > MAX_MODULE_LINES
        and not any(module == prefix or module.startswith(prefix + ".") for prefix in package_of(module).generated)
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


# -- the conformance suite: the reference agent apart from the runner, each check in its area's module ---------------

AGENT = "acp_conformance.agent"
JUDGES = ("acp_conformance.runner", "acp_conformance.client_mode")


def under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def test_the_reference_agent_and_the_runner_are_apart() -> None:
    """The runner judges any agent over the wire: it imports nothing of the reference agent, and the reference agent
    nothing of the runner (lazy imports count too)."""
    graph = runtime_import_graph()
    crossing = sorted(
        f"{importer} imports {imported}"
        for importer, imports in graph.items()
        for imported in imports
        if (under(importer, (AGENT,)) and under(imported, JUDGES))
        or (under(importer, JUDGES) and under(imported, (AGENT,)))
    )
    assert not crossing, "\n".join(crossing)


CHECKS_PACKAGE = "acp_conformance.runner.checks"


def area_module(version: int, area: str) -> str:
    """Where the checks of ``area`` live: ``checks/v2/permissions_tools.py`` for v2's "permissions and tools"."""
    return f"{CHECKS_PACKAGE}.v{version}.{area.replace(' and ', '_').replace(' ', '_')}"


def test_each_check_is_in_its_areas_module() -> None:
    misplaced = [
        f"v{version} {c.id} ({c.area}) is in {c.fn.__module__}, not {area_module(version, c.area)}"
        for version, checks in CHECK_SETS.items()
        for c in checks
        if c.fn.__module__ != area_module(version, c.area)
    ]
    assert not misplaced, "\n".join(misplaced)
    # Every module of a set but its shared base registers checks (a module the set's package does not import would
    # register none, and its checks would silently not run).
    registering = {c.fn.__module__ for checks in CHECK_SETS.values() for c in checks}
    for version in CHECK_SETS:
        package = f"{CHECKS_PACKAGE}.v{version}"
        modules = {m for m in all_modules(SUITE) if m.startswith(package + ".")} - {f"{package}.base"}
        assert modules == {m for m in registering if m.startswith(package + ".")}, package
