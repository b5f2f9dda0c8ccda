"""benchmarks/memory.py keeps working (tiny sizes; what it measures is not asserted, it is a report)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.schema_source import REPO

SCRIPT = REPO / "benchmarks" / "memory.py"
ROWS = (
    "1. updates for unknown session ids",
    "2. distinct tool call ids, one turn",
    "2i. the same, its events read with async for",
    "3. distinct message ids, one turn",
    "4. cancellable tool calls, turn running",
    "4. the same after cancel and idle",
    "5. one streamed message",
)
ANSWER_ROWS = (
    "6a. concurrent fs/read_text_file, a text file",
    "6b. concurrent fs/read_text_file, 0x01 bytes",
    "6c. concurrent terminal/output, 0x01 bytes",
)


def run_script(*args: str) -> str:
    """Its standard output; a scenario that fails to run fails the test (missed targets do not)."""
    argv = [sys.executable, str(SCRIPT), "--n", "30", "--chunks", "200", "--answer-size", "200000", *args]
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=300).stdout


def test_memory_benchmark_prints_a_row_per_scenario() -> None:
    out = run_script()
    assert "reference: the 31-entry history" in out
    table = [line for line in out.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| scenario | size involved | retained | peak growth |")
    assert [line.split(" | ")[0].removeprefix("| ") for line in table[1 : len(ROWS) + 1]] == list(ROWS)
    answers = table[len(ROWS) + 1 :]
    assert answers[0].startswith("| scenario | requests | bytes requested | encoded answers | peak RSS growth |")
    assert [line.split(" | ")[0].removeprefix("| ") for line in answers[1:]] == list(ANSWER_ROWS)


def test_memory_benchmark_reports_json_on_trio() -> None:
    report = json.loads(run_script("--backend", "trio", "--json"))
    assert report["backend"] == "trio" and report["n"] == 30 and report["chunks"] == 200
    assert [row["scenario"] for row in report["rows"]] == list(ROWS)
    assert all(row["peak"] >= row["retained"] >= 0 for row in report["rows"])
    stream = report["runs"]["stream"]
    assert stream["response_text"] == stream["text_bytes"]  # every chunk arrived
    assert [row["scenario"] for row in report["answer_rows"]] == list(ANSWER_ROWS)
    for name in ("answers_files", "answers_text_files", "answers_terminal"):
        run = report["runs"][name]
        assert run["answers"] == run["requests"] == 4 and run["bytes_requested"] == 4 * 200_000
