"""An agent built on acp_session's own rpc layer serving on its stdin/stdout (exercises stdio_server)."""

import anyio

from acp_session.rpc import Connection
from acp_session.transport import stdio_server


async def main() -> None:
    async with stdio_server() as transport, Connection(transport) as conn:
        conn.on_request("echo", lambda params: params)
        print("stray print goes to stderr, not the protocol stream")

        async def ask(params: dict) -> object:
            return await conn.request(params["method"], params.get("params"))

        conn.on_request("ask", ask)
        await conn.wait_closed()


if __name__ == "__main__":
    anyio.run(main)
