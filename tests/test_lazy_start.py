"""What each process the suite (and a user) starts imports: the entry points load only what their path needs.

The packages' ``__init__`` files import their exports on first use (``acp_session/_lazy.py``, PEP 562), since a
submodule's parent package is always imported first: an eager ``acp_session/__init__`` made the reference agent
(which needs ``acp_session.rpc``) import the whole client. Each probe runs in a fresh interpreter, so nothing
another test imported counts. The lazy facades themselves must keep every public name: what ``__all__`` lists
resolves, ``dir()`` shows it before first use, and the ``TYPE_CHECKING`` imports that type checkers and the API
reference read name exactly the exports the facade imports at run time.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAZY_PACKAGES = (
    "acp_session",
    "acp_session.client",
    "acp_session.conversation",
    "acp_session.protocol.v1",
    "acp_session.registry",
    "acp_session.server",
    "acp_session.transport",
)

# What the client, the CLI's chat, the remote transports, the registry's network side and protocol version 1 are:
# none of them is any business of the reference agent serving a v2 client over stdio.
CLIENT_SIDE = (
    "acp_session.cli",
    "acp_session.client",
    "acp_session.conversation",
    "acp_session.host",
    "acp_session.transport.remote",
    "acp_session.transport.subprocess",
    "acp_session.registry.install",
    "acp_session.registry.source",
    "acp_session.protocol.v1",
    "acp_session.schema.v1",
    "acp_conformance.runner",
    "acp_conformance.agent.v1_front",
    "acp_conformance.agent.v1_mutants",
)


def loaded_after(code: str) -> set[str]:
    """The modules of both packages in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = (
        f"{code}\nimport json, sys\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('acp_session', 'acp_conformance'))))"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return set(json.loads(run.stdout.splitlines()[-1]))


def under(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_the_rpc_layer_imports_no_client() -> None:
    modules = loaded_after("import acp_session.rpc")
    assert "acp_session.rpc.connection" in modules  # the probe sees what was imported
    assert under(modules, ("acp_session.client", "acp_session.conversation", "acp_session.protocol")) == []


def test_the_facade_alone_imports_next_to_nothing() -> None:
    assert loaded_after("import acp_session") <= {
        "acp_session",
        "acp_session._lazy",
        "acp_session._opener",
        "acp_session._version",
    }


def test_the_reference_agent_loads_no_client_side() -> None:
    modules = loaded_after("import acp_conformance.agent.__main__")
    assert {"acp_conformance.agent.server", "acp_session.rpc.connection"} <= modules
    assert under(modules, CLIENT_SIDE) == []


def test_the_reference_agent_loads_v1_for_a_v1_client() -> None:
    """The other side of the test above: the agent's v1 front is still there when a client offers only v1."""
    code = (
        "import anyio, json\n"
        "from acp_session.rpc import Connection\n"
        "from acp_session.transport import memory_pair\n"
        "from acp_conformance.agent.server import AgentOptions, ReferenceAgent\n"
        "async def main():\n"
        "    left, right = memory_pair()\n"
        "    async with anyio.create_task_group() as tg, Connection(left) as agent_side, Connection(right) as client:\n"
        "        ReferenceAgent(agent_side, tg, AgentOptions())\n"
        "        answer = await client.request('initialize', {'protocolVersion': 1, 'clientCapabilities': {}})\n"
        "        assert answer['protocolVersion'] == 1, answer\n"
        "        tg.cancel_scope.cancel()\n"
        "anyio.run(main)\n"
    )
    modules = loaded_after(code)
    assert {"acp_conformance.agent.v1_front", "acp_session.schema.v1.types"} <= modules


@pytest.mark.parametrize("argv", [["--help"], ["agents", "--help"], ["view", "--help"], ["config", "--help"]])
def test_the_cli_loads_the_chat_only_to_chat(argv: list[str]) -> None:
    code = f"import sys\nfrom acp_session.cli.main import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass"
    modules = loaded_after(code)
    assert "acp_session.cli.main" in modules
    chat = ("acp_session.cli.commands", "acp_session.cli.app", "acp_session.conversation.conversation")
    assert under(modules, (*chat, "acp_session.client.builder", "acp_session.transport.remote")) == []


def exports_by_type_checking(package: str) -> dict[str, str]:
    """name -> module (absolute) of the package's ``if TYPE_CHECKING:`` imports."""
    path = Path(importlib.import_module(package).__file__ or "")
    found: dict[str, str] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.dump(statement)
                module = importlib.util.resolve_name("." * statement.level + (statement.module or ""), package)
                for alias in statement.names:
                    found[alias.asname or alias.name] = module
    return found


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_a_lazy_facade_keeps_every_public_name(package: str) -> None:
    typed = exports_by_type_checking(package)
    assert typed, f"{package} has no TYPE_CHECKING imports"
    module = importlib.import_module(package)
    runtime = {
        name: importlib.util.resolve_name(where, package) for where, names in module._EXPORTS.items() for name in names
    }
    # What type checkers and the docs see is what the facade imports at run time (a submodule export aside).
    assert {n: m for n, m in typed.items() if m != package} == runtime
    assert set(module.__all__) - {"__version__"} == set(typed)
    assert set(module.__all__) <= set(dir(module))  # listed before first use
    for name in module.__all__:
        value = getattr(module, name)
        if name in runtime:
            assert value is getattr(importlib.import_module(runtime[name]), name), name
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018
