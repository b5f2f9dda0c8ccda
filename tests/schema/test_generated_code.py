"""The committed ``acp_session/schema/`` is exactly what the generator makes from the official schema."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from acp_session import schema
from tests.schema_source import REPO


def test_regenerating_gives_no_diff(schema_dir: Path, tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(REPO / "schema" / "generate.py"), str(schema_dir), "--out", str(tmp_path)],
        check=True,
    )
    committed = REPO / "acp_session" / "schema"
    generated = sorted(p.name for p in tmp_path.glob("*.py"))
    assert generated == sorted(p.name for p in committed.glob("*.py"))
    for name in generated:
        assert (tmp_path / name).read_text() == (committed / name).read_text(), f"{name} is stale: regenerate"


def test_generated_code_records_the_schema_hash(schema_dir: Path) -> None:
    assert hashlib.sha256((schema_dir / "schema.json").read_bytes()).hexdigest() == schema.SCHEMA_SHA256
    unstable = hashlib.sha256((schema_dir / "schema.unstable.json").read_bytes()).hexdigest()
    assert unstable == schema.UNSTABLE_SCHEMA_SHA256


def test_generated_code_copies_no_schema_descriptions(stable_schema: dict[str, object]) -> None:
    text = (REPO / "acp_session" / "schema" / "types.py").read_text()
    defs = stable_schema["$defs"]
    assert isinstance(defs, dict)
    long_sentences = {
        sentence.strip()
        for d in defs.values()
        for sentence in str(d.get("description", "")).split(".")
        if len(sentence.strip()) > 40
    }
    assert long_sentences, "the schema should have descriptions to compare against"
    assert not [s for s in long_sentences if s in text]


def test_every_definition_has_a_python_name(stable_schema: dict[str, object]) -> None:
    defs = stable_schema["$defs"]
    assert isinstance(defs, dict)
    missing = [name for name in defs if not hasattr(schema.types, name)]
    assert missing == []
