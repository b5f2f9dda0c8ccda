"""Driver for acp-session's command line: ``python -m conformance.client_mode.drivers.acp_session_cli AGENT...``.

Runs ``acp-session chat --json --yes --agent AGENT PROMPT`` (every permission approved, so the cancel scenario
shows whether an approval can follow a cancel) and, in the ``cancel`` scenario, presses Ctrl-C (SIGINT) once
at the first line of the agent's text, which the CLI turns into ``session/cancel``. Exits with the CLI's status.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys


def main() -> None:
    agent = sys.argv[1:]
    scenario = os.environ.get("ACP_CONFORMANCE_SCENARIO", "basic")
    prompt = os.environ.get("ACP_CONFORMANCE_PROMPT", "hello")
    command = [sys.executable, "-m", "acp_session", "chat", "--json", "--yes", "--agent", shlex.join(agent), prompt]
    with subprocess.Popen(command, stdout=subprocess.PIPE) as cli:
        assert cli.stdout is not None
        interrupted = False
        for line in cli.stdout:
            if scenario == "cancel" and not interrupted and b'"text"' in line:
                cli.send_signal(signal.SIGINT)
                interrupted = True
        status = cli.wait()
    # A cancelled turn is the cancel scenario's expected end (the CLI's exit status 3 says "cancelled").
    sys.exit(0 if scenario == "cancel" and status == 3 else status)


if __name__ == "__main__":
    main()
