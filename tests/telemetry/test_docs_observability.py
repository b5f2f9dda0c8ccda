"""docs/observability.md stays true: its example runs against the reference agent on both backends, and every
attribute its tables name is one the code emits (``acp_session.telemetry.names``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session.telemetry import names
from tests.schema_source import REPO
from tests.telemetry.support import REFERENCE

DOC = (REPO / "docs" / "observability.md").read_text()
EXAMPLE = re.search(r"```python\n# example: traces\n(.*?)```", DOC, re.DOTALL)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_traces_example_runs(backend: str, tmp_path: Path) -> None:
    assert EXAMPLE is not None
    namespace: dict[str, Any] = {"__name__": "observability_doc_example"}
    exec(compile(EXAMPLE.group(1), "docs/observability.md", "exec"), namespace)
    spans = anyio.run(namespace["traced_turn"], REFERENCE, str(tmp_path), backend=backend)
    assert spans[0] == "initialize" and "session/new" in spans
    assert "execute_tool edit_file" in spans and "invoke_agent acp-reference-agent" in spans


def test_the_documented_attributes_are_the_emitted_ones() -> None:
    documented = set(re.findall(r"`((?:gen_ai|acp|rpc|error)\.[a-z_.]+)`", DOC))
    emitted = {value for key, value in vars(names).items() if key.isupper() and isinstance(value, str) and "." in value}
    assert emitted - documented == set()
    assert documented - emitted == set()
