"""Mutation coverage of the v2 check set: every broken variant of the reference agent has its row in
``mutants_v2.MUTANTS``, every v2 check and every kit id a v2 check judges is failed by one, and the docs carry the
table. The rows themselves are run by ``test_mutants_v2_runs_*.py`` (``mutants_v2_runs.py``)."""

from __future__ import annotations

from pathlib import Path

from acp_conformance.agent.server import BROKEN_MODES
from acp_conformance.runner.checks import CHECK_SETS
from acp_conformance.runner.kit import kit_rows

from .mutants_v2 import MUTANTS, mutation_table

DOC = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"


def test_every_v2_mode_check_and_mapped_kit_id_has_its_mutant() -> None:
    """Every v2 broken mode has a row; every v2 check and every kit id a v2 check judges is failed by one."""
    assert set(MUTANTS) == set(BROKEN_MODES)
    failed = {target for mutant in MUTANTS.values() for target in mutant.fails}
    assert sorted({c.id for c in CHECK_SETS[2]} - failed) == []
    mapped = {row.id for row in kit_rows(2) if row.checks}
    assert sorted(mapped - failed) == []
    known = {c.id for c in CHECK_SETS[2]} | {row.id for row in kit_rows(2)}
    named = {t for m in MUTANTS.values() for t in (*m.fails, *m.skips)}
    assert sorted(named - known) == []


def test_the_mutation_table_in_the_docs_is_current() -> None:
    doc = DOC.read_text(encoding="utf-8")
    start = doc.index("<!-- mutants-v2 -->\n") + len("<!-- mutants-v2 -->\n")
    end = doc.index("\n<!-- /mutants-v2 -->")
    assert doc[start:end] == mutation_table(), "regenerate: python -m tests.conformance.mutants_v2"
