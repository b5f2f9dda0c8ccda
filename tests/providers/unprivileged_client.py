"""Run the client (with the file system provider) against the hostile v1 agent as whoever runs this script.

argv: BACKEND PROJECT LOG STEPS_JSON AGENT_PYTHON. ``test_hostile_requests.py`` runs it as an unprivileged user.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from acp_session import ClientBuilder
from tests.providers.agent_support import agent_argv, run_steps


async def main() -> None:
    _backend, project, log, steps, python = sys.argv[1:]
    async with ClientBuilder("unprivileged", "1").with_file_system().spawn(agent_argv(Path(log), python)) as client:
        session = await client.new_session(project)
        await run_steps(session, json.loads(steps))


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1])
