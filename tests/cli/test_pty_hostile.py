"""A hostile agent on a real terminal (issue 41 items 8-10): every string it sends carries OSC 52, OSC 0, CSI
cursor moves and erasing, C1 controls (U+009B), DCS and bidi overrides (``agents/spoofing_agent.py``). The bytes
the CLI writes to the pseudo-terminal hold none of them, every field is still shown, and the permission option
named to look like the reject choice shows its real kind: typing the reject key sends a reject."""

from __future__ import annotations

import io
import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

from tests.cli.support import CLI, PROMPT, cli_env, run_cli
from tests.helpers.hostile_strings import EVIL, SPOOFED_NAME

pexpect = pytest.importorskip("pexpect")

AGENT = Path(__file__).parent / "agents" / "spoofing_agent.py"
READY = re.escape(PROMPT.encode())

FORBIDDEN = {
    "an OSC sequence (52 clipboard, 0 title)": rb"\x1b\]",
    "a DCS, SOS, PM or APC string": rb"\x1b[PX^_]",
    "a string terminator": rb"\x1b\\|\x07",
    "the agent's CSI (zero-padded parameters)": rb"\x1b\[0\d",
    "the clipboard text": rb"owned",
    "a C1 control (U+0080-U+009F, U+009B is CSI)": rb"\xc2[\x80-\x9f]",
    "a bidi override, isolate or mark": "[\u202a-\u202e\u2066-\u2069\u200e\u200f]".encode(),
    "a backspace": rb"\x08(?!\x1b)",
}
"""Nothing of these reaches the terminal. (prompt_toolkit writes a space and a backspace before a cursor move.)"""

SHOWN = [
    "thought", "message", "plan-entry", "tool-title", "tool-kind", "tool-status", "tool-text", "old", "new",
    "diff-path", "raw-output", "severity", "notice", "currency", "question", "Reject", "stop-error",
    "stop-reason", "cmd", "cmd-description",
]  # fmt: skip
"""Every hostile field is still shown (its name and the bracket that held the escapes)."""


def test_a_hostile_agent_cannot_write_escapes_to_the_terminal_or_spoof_the_permission_question(
    tmp_path: Path,
) -> None:
    if not os.path.exists(CLI):
        pytest.skip("the acp-session console script is not installed (pip install -e .)")
    log = tmp_path / "agent.log"
    agent = f"{sys.executable} {AGENT} {log}"
    child = pexpect.spawn(
        CLI, ["chat", "--agent", agent], env=cli_env(tmp_path, color=True), cwd=str(tmp_path), timeout=20,
        dimensions=(40, 200),
    )  # fmt: skip
    seen = io.BytesIO()
    child.logfile_read = seen
    child.expect(READY)
    child.send("/")  # the agent's slash commands in the completion menu
    time.sleep(0.3)
    child.send("\t")
    child.expect(rb"cmd-description")
    time.sleep(0.3)
    child.send("\x15")  # Ctrl-U: the line emptied again
    time.sleep(0.3)
    child.sendline("all")
    child.expect(rb"answer \(a = always, r = reject\):")  # the letters of the kinds offered
    question = child.before.replace(b"\r\n", b"\n")
    # The first option's name reads like the reject choice; its line still ends with its real key and kind.
    assert re.search(rb"\n  1\. x +\[1/r\] Reject  \(r: reject once\) +\(a: allow always\)\n", question), question
    assert re.search(rb"\n  2\. Reject\[ \] +\(r: reject once\)\n", question), question
    child.sendline("r")
    child.expect(rb"\[stop: error\] \(stop-error\[ \]\)")
    child.expect(READY)
    child.sendline("odd")
    child.expect(rb"\[stop: stop-reason\[ \]\]")
    child.expect(READY)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()

    data = seen.getvalue()
    for what, pattern in FORBIDDEN.items():
        found = re.search(pattern, data)
        assert found is None, f"{what} reached the terminal: {data[max(0, found.start() - 80) : found.end() + 80]!r}"
    for name in SHOWN:
        assert name.encode() + b"[" in data, f"{name} was not shown"
    assert b"session sid- :" in data  # the session id in the info line, cleaned
    assert re.search(rb"the docs(\x1b\[0m)? \((\x1b\[[\d;]*m)?https://evil\.example/steal", data)  # the target shown
    answers = [json.loads(line) for line in log.read_text().splitlines() if '"outcome"' in line]
    assert [a["result"]["outcome"] for a in answers] == [{"outcome": "selected", "optionId": "opt-reject"}]


def test_json_lines_keep_the_hostile_strings_exactly_and_escaped(tmp_path: Path) -> None:
    """``--json`` changes no data: the strings come back exactly once parsed, while the lines themselves hold no
    control, C1 or bidi character a terminal showing them would act on."""
    log = tmp_path / "agent.log"
    agent = f"{sys.executable} {AGENT} {log}"
    result = run_cli(tmp_path, "chat", "--json", "--agent", agent, "all", stdin="r\n")
    assert result.returncode == 1, result.stderr  # the turn ended with stop reason error
    raw = re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f]", result.stdout)
    assert raw is None, result.stdout[max(0, raw.start() - 40) : raw.end() + 40]
    records = [json.loads(line) for line in result.stdout.splitlines()]
    (permission,) = [r for r in records if r["event"] == "permission"]
    assert permission["title"] == f"question[{EVIL}]"
    assert [o["name"] for o in permission["options"]] == [SPOOFED_NAME, f"Reject[{EVIL}]"]
    assert permission["answer"] == "opt-reject"
