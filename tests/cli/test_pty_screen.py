"""What the screen shows (the CLI's output replayed through a terminal emulator, pyte), not only what was
written. Typing while a reply streams never changes the reply: it holds its first line once, whether the user
typed ahead or pressed Ctrl-C (the reply is Markdown on a colour terminal, its last block redrawn in place, so an
echo moving the cursor would leave its first line behind as a copy). Ctrl-C on a permission question withdraws
it without drawing its prompt again."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest

from tests.cli.support import CLI, PROMPT, cli_env

pexpect = pytest.importorskip("pexpect")
pyte = pytest.importorskip("pyte")

COLUMNS, ROWS = 80, 60


def spawn(state: Path, *args: str) -> tuple[pexpect.spawn, io.StringIO]:
    if not os.path.exists(CLI):
        pytest.skip("the acp-session console script is not installed (pip install -e .)")
    output = io.StringIO()
    child = pexpect.spawn(
        CLI,
        list(args),
        env=cli_env(state, color=True),
        cwd=str(state),
        encoding="utf-8",
        timeout=30,
        dimensions=(ROWS, COLUMNS),
    )
    child.logfile_read = output
    return child, output


def screen(output: str) -> list[str]:
    """The terminal's lines once ``output`` was written to it, trailing blanks cut."""
    terminal = pyte.Screen(COLUMNS, ROWS)
    pyte.Stream(terminal).feed(output)
    return [line.rstrip() for line in terminal.display]


def finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    return int(child.exitstatus)


def first_lines(lines: list[str]) -> list[str]:
    """The lines that begin the reply (``chunk 1. chunk 2. ...``)."""
    return [line for line in lines if re.match(r"chunk 1\. chunk 2\. ", line)]


def test_text_typed_ahead_during_a_streamed_turn_leaves_the_reply_as_it_was(tmp_path: Path) -> None:
    child, output = spawn(tmp_path, "chat", "/slow 25")
    child.expect(r"chunk 12\. ")
    child.send("typed ahead\r")  # a terminal would echo it, and its newline, where the cursor is
    child.expect(r"chunk 25\.")
    assert finish(child) == 0
    lines = screen(output.getvalue())
    assert len(first_lines(lines)) == 1, "\n".join(lines)
    reply = " ".join(line for line in lines if line.startswith("chunk"))
    assert [int(n) for n in re.findall(r"chunk (\d+)\.", reply)] == list(range(1, 26)), reply
    assert not any("typed ahead" in line for line in lines), "\n".join(lines)


def test_ctrl_c_during_a_streamed_turn_leaves_the_reply_as_it_was(tmp_path: Path) -> None:
    child, output = spawn(tmp_path, "chat", "/slow 40")
    child.expect(r"chunk 12\. ")
    child.sendintr()
    child.expect(r"\[stop: cancelled\]")
    assert finish(child) == 3
    lines = screen(output.getvalue())
    assert len(first_lines(lines)) == 1, "\n".join(lines)
    reply = " ".join(line for line in lines if line.startswith("chunk"))
    numbers = [int(n) for n in re.findall(r"chunk (\d+)\.", reply)]
    assert numbers == list(range(1, len(numbers) + 1)) and 12 <= len(numbers) < 40, reply
    assert [line for line in lines if "^C" in line] == ["^C cancelling the active work (Ctrl-C again to quit)"]


def test_a_line_typed_ahead_is_the_next_prompt(tmp_path: Path) -> None:
    """Not echoed during the turn, the typed line is not lost either: the next prompt sends it."""
    child, _ = spawn(tmp_path, "chat")
    child.expect_exact(PROMPT)
    child.send("/slow 20\r")
    child.expect(r"chunk 5\. ")
    child.send("typed ahead\r")
    child.expect(r"\[stop: end_turn\]")
    child.expect("You said: typed ahead")
    child.expect(r"\[stop: end_turn\]")
    child.expect_exact(PROMPT)
    child.send("/exit\r")
    assert finish(child) == 0


def test_ctrl_c_on_a_permission_question_leaves_no_stray_prompt(tmp_path: Path) -> None:
    child, output = spawn(tmp_path, "chat")
    child.expect_exact(PROMPT)
    child.send("/permission\r")
    child.expect(r"answer \(o = allow once, r = reject\):")
    child.sendintr()
    child.expect(re.escape("(the question was withdrawn)"))
    child.expect(r"\[stop: cancelled\]")
    child.expect_exact(PROMPT)
    child.send("/exit\r")
    assert finish(child) == 3
    lines = screen(output.getvalue())
    assert [line for line in lines if line.startswith("answer (")] == ["answer (o = allow once, r = reject):"]
    cancelled = lines.index("^C cancelling the active work (Ctrl-C again to quit)")
    assert lines[cancelled + 1] == "(the question was withdrawn)", "\n".join(lines)
