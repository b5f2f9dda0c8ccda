"""Client-mode driver for acpx (npm, pinned in package.json): ``python acpx_client_driver.py AGENT...``.

Runs ``acpx --approve-all --agent AGENT exec PROMPT``, acpx's one-shot turn, in the run's directory. acpx's
exec has no way to cancel a turn or to leave a permission question open, so in the cancel scenarios it does
neither (the checks that judge what follows a cancel are then NOT_TESTED). acpx writes its own transcript to
stdout; the driver sends it to stderr, where the runner keeps the tail of a failing run. Exits with acpx's
status. Its session state goes to ``$HOME/.acpx`` (the tests' HOME is a temporary folder).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ACPX_CLI = Path(__file__).resolve().parent / "node_modules" / "acpx" / "dist" / "cli.js"


def main() -> None:
    agent = sys.argv[1:]
    prompt = os.environ.get("ACP_CONFORMANCE_PROMPT", "hello")
    node = shutil.which("node") or "node"
    command = [node, str(ACPX_CLI), "--approve-all", "--agent", shlex.join(agent), "exec", prompt]
    sys.exit(subprocess.run(command, stdout=sys.stderr.fileno(), check=False).returncode)


if __name__ == "__main__":
    main()
