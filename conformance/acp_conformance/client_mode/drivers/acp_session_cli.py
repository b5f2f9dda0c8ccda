"""Driver for acp-session's command line: ``python -m acp_conformance.client_mode.drivers.acp_session_cli AGENT...``.

Runs ``acp-session chat --json --yes --agent AGENT PROMPT`` (every permission approved, so the cancel scenario
shows whether an approval can follow a cancel) and, in the ``cancel`` scenario, presses Ctrl-C (SIGINT) once
at the first line of the agent's text, which the CLI turns into ``session/cancel``. In ``cancel-pending`` it
runs without ``--yes`` and types nothing, so the permission question stays open when Ctrl-C comes. In
``permission-policy`` the policy it is given becomes the CLI's flags (``allow=read deny=*``: ``--allow read
--deny-all``). Exits with the CLI's status (0 for a cancelled turn in the cancel scenarios).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys

from acp_conformance.client_mode.policy import POLICY_VARIABLE, parse_policy


def policy_flags(rules: list[tuple[str, str]]) -> list[str]:
    """The CLI's flags for client mode's policy words: ``--allow``/``--deny KIND`` in order, ``*`` as a preset."""
    flags: list[str] = []
    for action, kind in rules:
        if kind == "*":
            return [*flags, "--approve-all" if action == "allow" else "--deny-all"]
        flags += ["--allow" if action == "allow" else "--deny", kind]
    return flags


def main() -> None:
    agent = sys.argv[1:]
    scenario = os.environ.get("ACP_CONFORMANCE_SCENARIO", "basic")
    prompt = os.environ.get("ACP_CONFORMANCE_PROMPT", "hello")
    # In cancel-pending the permission question stays unanswered (no --yes; nothing is typed on stdin).
    approve = [] if scenario == "cancel-pending" else ["--yes"]
    if scenario == "permission-policy":
        approve = policy_flags(parse_policy(os.environ.get(POLICY_VARIABLE, "")))
    command = [sys.executable, "-m", "acp_session", "chat", "--json", *approve, "--agent", shlex.join(agent), prompt]
    cancels = scenario in ("cancel", "cancel-pending")
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as cli:
        assert cli.stdout is not None
        interrupted = False
        for line in cli.stdout:
            if cancels and not interrupted and b'"text"' in line:
                cli.send_signal(signal.SIGINT)
                interrupted = True
        status = cli.wait()
    # A cancelled turn is the cancel scenarios' expected end (the CLI's exit status 3 says "cancelled").
    sys.exit(0 if cancels and status == 3 else status)


if __name__ == "__main__":
    main()
