"""``acp-session chat`` end to end in a pseudo-terminal (pexpect): streaming order, a permission question
answered at the terminal, Ctrl-C cancelling the active work, a second Ctrl-C exiting."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.cli.support import CLI, PROMPT, cli_env

pexpect = pytest.importorskip("pexpect")

TIMEOUT = 15


def spawn(state: Path, *args: str, color: bool = False, pythonpath: str | None = None) -> pexpect.spawn:
    if not os.path.exists(CLI):
        pytest.skip("the acp-session console script is not installed (pip install -e .)")
    env = cli_env(state, color=color)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    return pexpect.spawn(
        CLI,
        list(args),
        env=env,
        cwd=str(state),
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(40, 200),
    )


def finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    assert child.signalstatus is None
    return int(child.exitstatus)


def test_streaming_order_permission_and_ctrl_c(tmp_path: Path) -> None:
    child = spawn(tmp_path, "chat")
    child.expect("/exit or Ctrl-D leaves")
    child.expect_exact(PROMPT)

    # A tool call, then the text after it, then the stop reason: in that order.
    child.sendline("/tool")
    child.expect(r"\[tool\] Editing example\.txt \(edit\): ")
    child.expect("I changed one line in example.txt.")
    child.expect(r"\[stop: end_turn\]")
    child.expect_exact(PROMPT)

    # The plan appears before the reply that follows it.
    child.sendline("/plan")
    child.expect(r"\[plan\]")
    child.expect(r"\[x\] Run the tests")
    child.expect("All three plan steps are done.")
    child.expect(r"\[stop: end_turn\]")
    child.expect_exact(PROMPT)

    # The permission question is asked at the terminal and the answer reaches the agent.
    child.sendline("/permission")
    child.expect(r"\[tool\] rm -rf build/ \(execute\): pending")
    child.expect(r"\? Run `rm -rf build/`\?")
    child.expect(r"1\. Allow once +\(o: allow once\)\s+2\. Reject +\(r: reject once\)")
    child.expect("answer ")
    child.sendline("o")
    child.expect(r"\[permission\] Run `rm -rf build/`\?: Allow once")
    child.expect(r"\[tool\] rm -rf build/ \(execute\): completed")
    child.expect("Done: build/ was removed.")
    child.expect(r"\[stop: end_turn\]")
    child.expect_exact(PROMPT)

    # Ctrl-C while the slow answer streams: session/cancel, the turn ends cancelled, the prompt comes back.
    child.sendline("/slow 40")
    child.expect(r"chunk 2\. ")
    child.sendintr()
    child.expect("cancelling the active work")
    child.expect(r"\[stop: cancelled\]")
    before_prompt = child.before
    assert "chunk 40." not in before_prompt
    child.expect_exact(PROMPT)

    # Ctrl-D ends the loop; the exit code reflects the last turn's stop reason (cancelled).
    child.sendeof()
    assert finish(child) == 3


def test_one_shot_ctrl_c_exit_code_and_second_ctrl_c(tmp_path: Path) -> None:
    child = spawn(tmp_path, "chat", "/slow 40")
    child.expect(r"chunk 1\. ")
    child.sendintr()
    child.expect(r"\[stop: cancelled\]")
    assert finish(child) == 3

    # An agent that ignores session/cancel: the second Ctrl-C exits with 130.
    agent = f"{os.path.dirname(CLI)}/acp-reference-agent --broken ignore-cancel"
    child = spawn(tmp_path, "chat", "--agent", agent, "/slow 40")
    child.expect(r"chunk 1\. ")
    child.sendintr()
    child.expect("cancelling the active work")
    child.sendintr()
    child.expect("interrupted")
    assert finish(child) == 130


def test_permission_rejected_and_thoughts_dimmed(tmp_path: Path) -> None:
    child = spawn(tmp_path, "chat", color=True)
    child.expect_exact(PROMPT)
    child.sendline("/thought")
    child.expect(re.escape("\x1b[2m(thinking) "))
    child.expect(r"\[stop: end_turn\]")
    child.expect_exact(PROMPT)
    child.sendline("/permission")
    child.expect("answer ")
    child.sendline("maybe")
    child.expect("not one of the offered answers")
    child.expect("answer ")
    child.sendline("r")
    child.expect("Permission was not granted, so I did nothing.")
    child.expect_exact(PROMPT)

    # Ctrl-C while the question is open: the work is cancelled and the question withdrawn; the line typed
    # next goes to the next prompt.
    child.sendline("/permission")
    child.expect("answer ")
    child.sendintr()
    child.expect(re.escape("(the question was withdrawn)"))
    child.expect(r"\[stop: cancelled\]")
    child.expect_exact(PROMPT)
    child.sendline("hello")
    child.expect("Hello! I am the ACP reference agent.")
    child.expect_exact(PROMPT)
    child.sendline("/exit")
    assert finish(child) == 0
