from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.schema_source import require_schema_dir


@pytest.fixture(scope="session")
def schema_dir() -> Path:
    return require_schema_dir()


@pytest.fixture(scope="session")
def stable_schema(schema_dir: Path) -> dict[str, Any]:
    return json.loads((schema_dir / "schema.json").read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def unstable_schema(schema_dir: Path) -> dict[str, Any]:
    return json.loads((schema_dir / "schema.unstable.json").read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def v1_schema_dir() -> Path:
    return require_schema_dir(1)


@pytest.fixture(scope="session")
def v1_stable_schema(v1_schema_dir: Path) -> dict[str, Any]:
    return json.loads((v1_schema_dir / "schema.json").read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def v1_unstable_schema(v1_schema_dir: Path) -> dict[str, Any]:
    return json.loads((v1_schema_dir / "schema.unstable.json").read_text())  # type: ignore[no-any-return]
