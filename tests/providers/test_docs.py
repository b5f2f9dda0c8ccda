"""docs/providers.md stays true: its example runs, and the tests it cites exist and cite their rule."""

from __future__ import annotations

import re
from typing import Any

import anyio
import pytest

from tests.schema_source import REPO

DOC = (REPO / "docs" / "providers.md").read_text()
EXAMPLE = re.search(r"```python\n# example: buffers\n(.*?)```", DOC, re.DOTALL)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_buffers_example_runs(backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert EXAMPLE is not None
    namespace: dict[str, Any] = {"__name__": "providers_doc_example"}
    exec(compile(EXAMPLE.group(1), "docs/providers.md", "exec"), namespace)
    anyio.run(namespace["main"], backend=backend)
    assert capsys.readouterr().out == "print('unsaved')\nx\n"


def test_rules_covered_name_real_tests_that_cite_them() -> None:
    section = DOC.split("## Rules covered", 1)[1]
    rows = re.findall(r"^\| (ACP1-\d{3}) .*?\| (.*) \|$", section, re.MULTILINE)
    assert {rule for rule, _ in rows} == {"ACP1-005", "ACP1-009"}
    for rule, cell in rows:
        cited = re.findall(r"`(test_\w+)\.py::(test_\w+)`", cell)
        assert cited, rule
        for module, test in cited:
            source = (REPO / "tests" / "providers" / f"{module}.py").read_text()
            body = source.split(f"def {test}(", 1)
            assert len(body) == 2, f"{module}.py::{test} (cited for {rule}) does not exist"
            assert rule in re.split(r"\n(?:async )?def ", body[1], maxsplit=1)[0], f"{test} does not cite {rule}"
