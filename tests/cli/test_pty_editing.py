"""The interactive loop in a pseudo-terminal: line editing and history (prompt_toolkit), Ctrl-L, the prompt and
progress on the terminal (stderr) while answers go to stdout, permission questions off stdout."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from tests.cli.support import CLI, PROMPT, cli_env, run_cli
from tests.cli.test_pty import finish, spawn

pexpect = pytest.importorskip("pexpect")

LEFT = "\x1b[D"
UP = "\x1b[A"
CTRL_L = "\x0c"


def test_left_arrow_edits_the_line_and_ctrl_l_is_not_sent(tmp_path: Path) -> None:
    child = spawn(tmp_path, "chat")
    child.expect("/exit or Ctrl-D leaves")
    child.expect_exact(PROMPT)
    child.send("abc" + LEFT + LEFT + "X\r")
    child.expect(r"You said: (\S*)\r\n")
    assert child.match.group(1) == "aXbc"
    child.expect(r"\[stop: end_turn\]")
    child.expect_exact(PROMPT)
    child.send(CTRL_L)
    child.send("hi there\r")
    child.expect(r"You said: ([^\r\n]*)\r\n")
    assert child.match.group(1) == "hi there"
    child.expect_exact(PROMPT)
    child.sendline("/exit")
    assert finish(child) == 0

    # The session's stored title is the line as edited, no escape sequence in it.
    listed = run_cli(tmp_path, "sessions")
    header, row = listed.stdout.splitlines()
    assert header.split() == ["ID", "NAME", "UPDATED", "DIRECTORY", "TITLE"], listed.stdout
    assert row.split()[0] == "sess-1" and row.rstrip().endswith("aXbc"), listed.stdout
    assert "\x1b" not in listed.stdout


def test_history_recalls_earlier_lines_in_this_run_and_the_next(tmp_path: Path) -> None:
    child = spawn(tmp_path, "chat")
    child.expect_exact(PROMPT)
    child.send("first line\r")
    child.expect("You said: first line")
    child.expect_exact(PROMPT)
    child.send("second\r")
    child.expect("You said: second")
    child.expect_exact(PROMPT)
    child.send(UP + UP + "\r")
    child.expect(r"You said: ([^\r\n]*)\r\n")
    assert child.match.group(1) == "first line"
    child.expect_exact(PROMPT)
    child.sendeof()
    assert finish(child) == 0
    history = tmp_path / "acp-session" / "prompt-history"
    assert history.is_file()

    again = spawn(tmp_path, "chat")
    again.expect_exact(PROMPT)
    again.send(UP + "\r")
    again.expect(r"You said: ([^\r\n]*)\r\n")
    assert again.match.group(1) == "first line"
    again.expect_exact(PROMPT)
    again.sendline("/exit")
    assert finish(again) == 0


def test_ctrl_c_at_the_prompt_keeps_the_typed_text(tmp_path: Path) -> None:
    child = spawn(tmp_path, "chat")
    child.expect_exact(PROMPT)
    child.send("par")
    child.expect("par")
    child.sendintr()
    child.expect(re.escape("Ctrl-C again or Ctrl-D to quit"))
    child.expect_exact(PROMPT)
    child.expect("par")
    child.send("t\r")
    child.expect(r"You said: ([^\r\n]*)\r\n")
    assert child.match.group(1) == "part"
    child.expect_exact(PROMPT)
    child.sendeof()
    assert finish(child) == 0


def test_prompt_and_progress_go_to_the_terminal_answers_to_stdout(tmp_path: Path) -> None:
    if not os.path.exists(CLI):
        pytest.skip("the acp-session console script is not installed (pip install -e .)")
    out = tmp_path / "out.txt"
    child = pexpect.spawn(
        "/bin/sh",
        ["-c", f"{shlex.quote(CLI)} chat > {shlex.quote(str(out))}"],
        env=cli_env(tmp_path),
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=15,
        dimensions=(40, 200),
    )
    child.expect("/exit or Ctrl-D leaves")
    child.expect_exact(PROMPT)
    child.send("hello\r")
    child.expect_exact(PROMPT)  # the next prompt: the turn has ended
    child.send("/permission\r")
    child.expect(re.escape("? Run `rm -rf build/`?"))
    child.expect("answer ")
    child.send("o\r")
    child.expect_exact(PROMPT)
    child.sendeof()
    assert finish(child) == 0
    written = out.read_text()
    assert "Hello! I am the ACP reference agent." in written
    assert "[permission] Run `rm -rf build/`?: Allow once" in written
    assert "Done: build/ was removed." in written
    for prompt_text in ("> ", "type a prompt", "? Run", "answer ("):
        assert prompt_text not in written, (prompt_text, written)


def test_a_piped_prompt_and_its_question_go_to_stderr(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "chat", stdin="/permission\n")
    assert result.returncode == 9, result.stderr  # the question could not be asked (docs/cli.md)
    # stdin was the prompt and has ended: the question is answered "cancelled", never an approval
    assert "[permission] Run `rm -rf build/`?: cancelled" in result.stdout
    for prompt_text in ("> ", "? Run", "answer ("):
        assert prompt_text not in result.stdout, (prompt_text, result.stdout)
    for question in ("? Run `rm -rf build/`?", "answer (o = allow once, r = reject): "):
        assert question in result.stderr, (question, result.stderr)
