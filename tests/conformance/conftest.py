"""The ``node`` fixture for the client-mode runs of the official TypeScript SDK (as tests/interop has it)."""

from __future__ import annotations

import shutil

import pytest

from tests.schema_source import install_interop_packages


@pytest.fixture(scope="session")
def node() -> str:
    """Path of ``node``, with the TypeScript SDK installed in tests/interop/node_modules (never skipped)."""
    found = shutil.which("node")
    if found is None:
        pytest.fail("the TypeScript SDK's client-mode run needs node (>= 20) on PATH", pytrace=False)
    problem = install_interop_packages()
    if problem is not None:
        pytest.fail(f"the TypeScript SDK's client-mode run needs the SDK: {problem}", pytrace=False)
    return found
