"""Run the client against a hostile agent under a ``sys.addaudithook`` and print what the library did.

usage: python -m tests.robustness.audit_client LOGFILE CONFIG_JSON. After ``session/new`` the hook is armed and a
prompt is sent; the agent's ``on_prompt`` script then sends its payload. Prints a JSON list of the audited
events (file opens outside the Python installation, processes, sockets, URL requests) seen while armed.
"""

from __future__ import annotations

import json
import sys
import sysconfig
from pathlib import Path
from typing import Any

import anyio

from acp_session import ClientBuilder
from acp_session.schema.types import UpdateSessionNotification

WATCHED = (
    "subprocess.",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.fork",
    "os.startfile",
    "pty.",
    "socket.",
    "urllib.",
    "http.",
    "webbrowser",
    "shutil.",
    "os.remove",
    "os.rename",
    "os.mkdir",
)
INSTALL = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")} | {sys.prefix}
AGENT = Path(__file__).parent / "agents" / "hostile_agent.py"
armed = False
events: list[list[Any]] = []


def hook(event: str, args: tuple[Any, ...]) -> None:
    if not armed:
        return
    if event == "open":
        path = str(args[0])
        if path.startswith(tuple(INSTALL)) or path.endswith((".py", ".pyc")):
            return  # a lazy import
        events.append([event, path])
    elif event.startswith(WATCHED):
        events.append([event, repr(args)[:200]])


async def main(log: str, config: str) -> None:
    global armed
    done = anyio.Event()

    def on_update(note: UpdateSessionNotification) -> None:
        if getattr(note.update, "message_id", None) == "marker":
            done.set()

    builder = ClientBuilder("audit", "1.0").on_session_update(on_update)
    builder.on_request_permission(lambda r: None)
    builder.on_elicitation(lambda r: {"action": "cancel"}, modes=("form",))
    async with builder.spawn([sys.executable, str(AGENT), log, config]) as client:
        session = await client.new_session("/tmp")
        sys.addaudithook(hook)
        armed = True
        with open(log + ".probe", "w"):  # proves the hook works: the one event expected
            pass
        session.send_prompt("go")
        with anyio.fail_after(10):
            await done.wait()
        await anyio.sleep(0.2)  # let request handlers answer
        armed = False
    print(json.dumps(events))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
