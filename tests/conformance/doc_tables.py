"""Read the results tables of docs/conformance.md, so tests can hold the documented results to real runs."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"


def results_table(heading: str) -> tuple[list[str], dict[str, list[str]]]:
    """The table under ``heading``: its column names after "check", and each check's results in those columns."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(heading)
    rows: list[str] = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break  # the end of the first table under the heading
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    results: dict[str, list[str]] = {}
    for row in rows[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        match = re.fullmatch(r"`([a-z0-9-]+)`", cells[0])
        if match:
            results[match[1]] = cells[1:]
    return header[1:], results


def documented(heading: str, column: str) -> dict[str, str]:
    """``check id -> result`` (pass, fail, warn, n/a) of one column of the table under ``heading``."""
    columns, rows = results_table(heading)
    index = columns.index(column)
    return {check: values[index] for check, values in rows.items()}
