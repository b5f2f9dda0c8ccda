"""The I/O backend seam: one module knows asyncio and trio; everything else asks it."""

from __future__ import annotations

import ast
from collections.abc import Sized
from pathlib import Path

import anyio
import pytest

import acp_session
from acp_session.transport.backend import AsyncioBackend, Backend, current_backend

pytestmark = pytest.mark.anyio

PACKAGE = Path(acp_session.__file__).parent


async def test_the_backend_of_the_running_loop(anyio_backend_name: str) -> None:
    backend = current_backend()
    if anyio_backend_name == "asyncio":
        assert isinstance(backend, AsyncioBackend) and backend.name == "asyncio"
        assert backend.new_waiter is not None and backend.call_soon is not None
        assert backend.readiness_callbacks and isinstance(backend.ready_queue, Sized)
        waiter = backend.new_waiter()
        called: list[int] = []
        backend.call_soon(lambda: called.append(1))
        backend.call_soon(lambda: waiter.set_result(None))
        await waiter
        assert called == [1] and waiter.done()
    else:
        assert type(backend) is Backend and backend.name == "anyio"
        assert backend.new_waiter is None and backend.call_soon is None and backend.ready_queue is None
        assert not backend.readiness_callbacks
        with pytest.raises(NotImplementedError):
            backend.add_reader(0, lambda: None)
    flag = backend.new_flag()
    assert not flag.is_set()
    flag.set()
    with anyio.fail_after(1):
        await flag.wait()
        await backend.yield_to_callers()


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("layer", ["rpc", "transport"])
def test_only_the_backend_module_imports_an_event_loop_library(layer: str) -> None:
    offenders = [
        path.name
        for path in sorted((PACKAGE / layer).glob("*.py"))
        if path.name != "backend.py" and _imports(path) & {"asyncio", "trio", "sniffio"}
    ]
    assert offenders == []


def test_the_transport_layer_never_imports_the_rpc_layer() -> None:
    for path in sorted((PACKAGE / "transport").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                assert not (node.level >= 2 or module.startswith("acp_session")), f"{path.name} imports {module}"


async def test_the_backend_is_shared_within_a_loop_run() -> None:
    """A turn's reader asks once per turn: the same object while the loop runs, no anyio lookup again."""
    first = current_backend()
    seen: list[Backend] = []

    async def ask() -> None:
        seen.append(current_backend())

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        group.start_soon(ask)
    assert seen == [first, first] and all(backend is first for backend in seen)


@pytest.mark.parametrize("backend_name", ["asyncio", "trio"])
def test_another_loop_run_gets_its_own_backend(backend_name: str) -> None:
    async def ask() -> tuple[Backend, object]:
        backend = current_backend()
        flag = backend.new_flag()
        flag.set()
        await flag.wait()  # bound to this run's loop, not to one that has ended
        return backend, flag

    one, _ = anyio.run(ask, backend=backend_name)
    two, flag = anyio.run(ask, backend=backend_name)
    assert one is not two
    assert type(flag) is type(two.new_flag())
