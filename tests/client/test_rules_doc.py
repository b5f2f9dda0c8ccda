"""Every test named in the "Client layer" section of docs/rules.md exists and cites its rule id."""

from __future__ import annotations

import re

from tests.schema_source import REPO


def test_client_layer_rule_rows_name_real_tests() -> None:
    text = (REPO / "docs" / "rules.md").read_text().split("## Client layer", 1)[1]
    rows = re.findall(r"^\| (ACP2-\d{3}) \| \w+ \| (.*) \|$", text, re.MULTILINE)
    assert len(rows) >= 15
    for rule, cell in rows:
        for module, test in re.findall(r"`(test_\w+)\.py::(test_\w+)`", cell):
            source = (REPO / "tests" / "client" / f"{module}.py").read_text()
            body = source.split(f"def {test}(", 1)
            assert len(body) == 2, f"{module}.py::{test} (cited for {rule}) does not exist"
            assert rule in body[1].split("\nasync def ", 1)[0].split("\ndef ", 1)[0], f"{test} does not cite {rule}"
