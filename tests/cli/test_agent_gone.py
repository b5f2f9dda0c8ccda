"""An agent that dies is told of in the same words by the library and the CLI (``exit_words``), and the CLI says
how to come back whether the agent died at the prompt or during a turn."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from acp_session.cli.messages import describe
from acp_session.client import ClientBuilder
from acp_session.errors import ConnectionClosed
from tests.cli.support import CLI, PROMPT, cli_env

pexpect = pytest.importorskip("pexpect")

EXITS = "import sys; sys.stdin.readline(); sys.exit(3)"


def _single(exc: BaseException) -> BaseException:
    """The one error inside (nested) exception groups of one member each (Python 3.10 has no ExceptionGroup)."""
    while isinstance(getattr(exc, "exceptions", None), tuple) and len(exc.exceptions) == 1:  # type: ignore[attr-defined]
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


@pytest.mark.anyio
async def test_the_library_and_the_cli_say_the_same_of_an_agent_that_exited() -> None:
    with pytest.raises(BaseException) as caught:  # the error may arrive inside a group
        async with ClientBuilder("t", "1").spawn([sys.executable, "-c", EXITS]):
            pass
    error = _single(caught.value)
    assert isinstance(error, ConnectionClosed) and error.exit_code == 3
    assert str(error) == "the agent exited with code 3"
    assert describe(error).message == "the agent exited with code 3; run its command by hand to see why"


def test_an_agent_killed_during_a_turn_gets_the_continue_line(tmp_path: Path) -> None:
    if not os.path.exists(CLI):
        pytest.skip("the acp-session console script is not installed (pip install -e .)")
    child = pexpect.spawn(CLI, ["chat"], env=cli_env(tmp_path), cwd=str(tmp_path), encoding="utf-8", timeout=15)
    child.expect_exact(PROMPT)
    child.sendline("/slow 40")
    child.expect(r"chunk 2\. ")
    agent = Path(f"/proc/{child.pid}/task/{child.pid}/children").read_text().split()[0]
    os.kill(int(agent), signal.SIGKILL)
    child.expect(r"\[error\] the agent was killed \(SIGKILL\)")
    child.expect("acp-session: start it again and continue with: acp-session chat -c")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
