"""Client-mode driver for acpx (npm, pinned in package.json): ``python acpx_client_driver.py AGENT...``.

Runs ``acpx --approve-all --agent AGENT exec PROMPT``, acpx's one-shot turn, in the run's directory (in
``permission-policy``, the policy it is given as acpx's ``--permission-policy`` JSON instead: ``allow=read deny=*``
is ``{"autoApprove": ["read"], "defaultAction": "deny"}``). acpx's
exec has no way to cancel a turn or to leave a permission question open, so in the cancel scenarios it does
neither (the checks that judge what follows a cancel are then NOT_TESTED). acpx writes its own transcript to
stdout; the driver sends it to stderr, where the runner keeps the tail of a failing run. Exits with acpx's
status. Its session state goes to ``$HOME/.acpx`` (the tests' HOME is a temporary folder).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from acp_conformance.client_mode.policy import POLICY_VARIABLE, parse_policy

ACPX_CLI = Path(__file__).resolve().parent / "node_modules" / "acpx" / "dist" / "cli.js"


def acpx_policy(text: str) -> dict[str, Any]:
    """Client mode's policy words as acpx's policy object: the kinds to approve and deny, ``*`` as the default."""
    policy: dict[str, Any] = {}
    for action, kind in parse_policy(text):
        if kind == "*":
            policy.setdefault("defaultAction", "approve" if action == "allow" else "deny")
        else:
            policy.setdefault("autoApprove" if action == "allow" else "autoDeny", []).append(kind)
    return policy


def main() -> None:
    agent = sys.argv[1:]
    prompt = os.environ.get("ACP_CONFORMANCE_PROMPT", "hello")
    node = shutil.which("node") or "node"
    permissions = ["--approve-all"]
    if os.environ.get("ACP_CONFORMANCE_SCENARIO") == "permission-policy":
        permissions = ["--permission-policy", json.dumps(acpx_policy(os.environ.get(POLICY_VARIABLE, "")))]
    command = [node, str(ACPX_CLI), *permissions, "--agent", shlex.join(agent), "exec", prompt]
    sys.exit(subprocess.run(command, stdout=sys.stderr.fileno(), check=False).returncode)


if __name__ == "__main__":
    main()
