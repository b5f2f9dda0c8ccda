"""A client that runs the hostile v1 agent's script, prints ``ready`` and waits to be killed.

argv: LOG CWD STEPS_JSON BACKEND. ``test_escapes.py`` SIGKILLs it to check that the reapers end everything on their own.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from acp_session import ClientBuilder
from tests.providers.agent_support import agent_argv, run_steps


async def main() -> None:
    log, cwd, steps, _backend = sys.argv[1:]
    builder = ClientBuilder("doomed", "1").with_terminals(kill_grace=0.3)
    async with builder.spawn(agent_argv(Path(log)), grace_period=0.3, terminate_timeout=0.3) as client:
        session = await client.new_session(cwd)
        await run_steps(session, json.loads(steps))
        print("ready", flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[4])
