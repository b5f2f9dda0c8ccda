"""The interactive ``chat`` in a real pseudo-terminal against the reference agent (issue 30 items 1 and 3, and the
prompt_toolkit / rich front end): a pasted block is one prompt, Alt-Enter and an open fence add lines, Tab
completes the agent's slash commands, /exit and Ctrl-D leave, a status line shows while the agent works, the
reply's Markdown is rendered, a killed agent is reported at once; without the ``cli`` extra the plain loop runs
with one hint."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.cli.support import PROMPT
from tests.cli.test_pty import finish, spawn
from tests.lifecycle.support import AGENTS

pexpect = pytest.importorskip("pexpect")

PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
ALT_ENTER = "\x1b\r"


def ready(state: Path, *args: str, color: bool = False) -> pexpect.spawn:
    child = spawn(state, "chat", *args, color=color)
    child.expect("/exit or Ctrl-D leaves")
    child.expect_exact(PROMPT)
    return child


def test_a_three_line_paste_is_one_prompt(tmp_path: Path) -> None:
    child = ready(tmp_path)
    child.send(PASTE_START + "first line\nsecond line\nthird line" + PASTE_END)
    time.sleep(0.2)  # the paste is in the editor, nothing sent yet
    child.send("\r")
    child.expect(r"You said: first line\r\nsecond line\r\nthird line\r\n")
    child.expect(r"\[stop: end_turn\]")
    child.expect_exact(PROMPT)
    child.sendline("/exit")
    assert finish(child) == 0
    # One turn: the agent received one prompt.
    store = (tmp_path / "acp-session" / "reference-agent-sessions.json").read_text(encoding="utf-8")
    assert '"msg-user": 1,' in store and "first line\\nsecond line\\nthird line" in store


def test_alt_enter_and_an_open_fence_add_lines_instead_of_sending(tmp_path: Path) -> None:
    child = ready(tmp_path)
    child.send("one" + ALT_ENTER + "two\r")
    child.expect(r"You said: one\r\ntwo\r\n")
    child.expect_exact(PROMPT)
    child.send("```\r")  # the fence is open: Enter adds a line
    child.send("code\r")
    child.send("```\r")  # closed: Enter sends
    child.expect(r"You said: ```\r\ncode\r\n```")
    child.expect_exact(PROMPT)
    child.sendeof()  # Ctrl-D leaves
    assert finish(child) == 0


def test_tab_completes_the_agents_slash_commands(tmp_path: Path) -> None:
    child = ready(tmp_path)
    child.send("/to")
    child.expect("/tool")  # offered in the completion menu while typing, from the agent's available commands
    child.expect("Run a tool call")  # with the command's description
    child.send("\t\r")
    child.expect(r"\[tool\] Editing example\.txt \(edit\)")
    child.expect(r"\[stop: end_turn\]")
    child.expect_exact(PROMPT)
    child.send("/ex")
    child.expect("leave the chat")  # the CLI's own /exit is offered too
    child.send("\t\r")
    assert finish(child) == 0


@pytest.mark.parametrize("word", ["/exit", "/quit", "exit", "quit"])
def test_leaving_words_are_not_sent_to_the_agent(tmp_path: Path, word: str) -> None:
    child = ready(tmp_path)
    child.sendline(word)
    assert finish(child) == 0
    assert "You said" not in child.before


def test_ctrl_c_cancels_a_question_and_a_streaming_turn(tmp_path: Path) -> None:
    child = ready(tmp_path)
    child.sendline("/permission")
    child.expect("answer ")
    child.sendintr()  # Ctrl-C in the permission question: the work is cancelled
    child.expect(r"\(the question was withdrawn\)")
    child.expect(r"\[stop: cancelled\]")
    child.expect_exact(PROMPT)
    child.sendline("/slow 30")
    child.expect(r"chunk 1\. ")
    child.sendintr()
    child.expect(r"\[stop: cancelled\]")
    child.expect_exact(PROMPT)
    child.sendline("/exit")
    assert finish(child) == 3


def test_a_status_line_shows_while_the_agent_works(tmp_path: Path) -> None:
    agent = shlex.join([sys.executable, str(AGENTS / "slow_agent.py"), json.dumps({"hang": ["session/prompt"]})])
    child = spawn(tmp_path, "chat", "--agent", agent, "hi")
    child.expect(re.escape("working\u2026 1 s (Ctrl-C cancels)"))
    child.expect(re.escape("working\u2026 2 s (Ctrl-C cancels)"))
    child.sendintr()
    child.expect("cancelling the active work")  # the status line was erased for it
    child.sendintr()  # this agent ignores the cancel: the second Ctrl-C leaves
    child.expect("interrupted")
    assert finish(child) == 130


def test_a_killed_agent_is_reported_at_once(tmp_path: Path) -> None:
    child = ready(tmp_path)
    children = Path(f"/proc/{child.pid}/task/{child.pid}/children").read_text().split()
    assert len(children) == 1
    started = time.monotonic()
    os.kill(int(children[0]), signal.SIGKILL)
    child.expect(r"acp-session: the agent was killed \(SIGKILL\)")
    assert time.monotonic() - started < 3  # at once, not at the next prompt
    child.expect("continue with: acp-session chat -c")
    assert finish(child) == 1


def test_markdown_is_rendered_on_a_colour_terminal(tmp_path: Path) -> None:
    child = spawn(tmp_path, "chat", "/markdown", color=True)
    child.expect(re.escape("\x1b[1;4mA Markdown reply"))  # the heading: bold, underlined, no "#"
    child.expect(re.escape("\x1b[1mMarkdown\x1b[0m"))  # **Markdown** in bold
    child.expect(" \u2022 ")  # list bullets
    child.expect(re.escape("def"))  # the code block, highlighted
    child.expect(r"\[stop: end_turn\]")
    assert finish(child) == 0
    assert "# A Markdown reply" not in child.before


def test_without_the_cli_extra_the_plain_loop_runs_with_one_hint(tmp_path: Path) -> None:
    # Packages that fail to import stand for prompt_toolkit and rich not being installed.
    blocked = tmp_path / "blocked"
    for name in ("prompt_toolkit", "rich"):
        (blocked / name).mkdir(parents=True)
        (blocked / name / "__init__.py").write_text("raise ImportError('not installed')\n")
    child = spawn(tmp_path, "chat", color=True, pythonpath=str(blocked))
    child.expect(re.escape("install the cli extra: pip install 'acp-session[cli]'"))
    child.expect("/exit or Ctrl-D leaves")
    child.expect("> ")
    child.sendline("/markdown")
    child.expect("# A Markdown reply")  # plain text, as sent
    child.expect(r"\[stop: end_turn\]")
    child.expect("> ")
    child.sendline("/exit")
    assert finish(child) == 0
    assert child.before.count("cli extra") == 0
