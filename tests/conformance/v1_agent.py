"""A deterministic ACP protocol-version-1 agent for the conformance runner's tests, with deliberate defects.

    python tests/conformance/v1_agent.py [--broken MODE]... [--login session|prompt]

Plain JSON lines on stdin/stdout (no SDK), so each defect is exactly one change. The prompt's first word picks
the behaviour: ``slow N`` (N chunks, 50 ms apart), ``permission`` (asks before an edit), ``read PATH`` (through
``fs/read_text_file``), ``run CMD ARGS`` (through ``terminal/*``), ``plan``; anything else is echoed. It
advertises ``loadSession`` and ``sessionCapabilities`` list, resume, close and delete, two modes and one
select config option, and only calls ``fs/*`` / ``terminal/*`` when the client advertised them.

``--login session`` (or ``prompt``) makes it want a login, as many real agents do: ``session/new`` (or
``session/prompt``) is answered -32000 until ``authenticate`` succeeds with ``agent-login``, or with
``key-login`` when V1_AGENT_KEY is set in its environment.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

BROKEN = {
    "junk-stdout": "write a plain-text line to stdout first",
    "ignore-cancel": "ignore session/cancel (closing a session still cancels its turn)",
    "bad-stop-reason": "end ordinary turns with stopReason 'done', which the v1 schema does not have",
    "relative-paths": "call fs/read_text_file with a path relative to the session's cwd",
    "ignore-capabilities": "call fs/* and terminal/* even when the client did not advertise them",
    "no-replay": "answer session/load without replaying the conversation",
    "updates-after-cancel": "send one more chunk after answering a cancelled prompt",
}
MODES = [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]
AUTH_METHODS = [
    {"id": "agent-login", "name": "Log in", "description": "Log in through the agent"},
    {"type": "env_var", "id": "key-login", "name": "Use V1_AGENT_KEY", "vars": [{"name": "V1_AGENT_KEY"}]},
]
MODELS = [{"value": "small", "name": "Small"}, {"value": "large", "name": "Large"}]


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Session:
    session_id: str
    cwd: str
    mode: str = "ask"
    model: str = "small"
    history: list[dict[str, Any]] = field(default_factory=list)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    turn: asyncio.Task[str] | None = None
    tool_calls: int = 0


class Agent:
    def __init__(self, broken: set[str], login: str | None = None) -> None:
        self.broken = broken
        self.login = login  # "session" or "prompt": what is refused until authenticate succeeds
        self.sessions: dict[str, Session] = {}
        self.count = 0
        self.fs = False
        self.terminal = False
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.next_id = 0
        self.tasks: set[asyncio.Task[Any]] = set()

    # -- wire --------------------------------------------------------------------------------------------

    def write(self, message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        sys.stdout.flush()

    def update(self, session: Session, update: dict[str, Any], history: bool = True) -> None:
        if history:
            session.history.append(update)
        self.write({"method": "session/update", "params": {"sessionId": session.session_id, "update": update}})

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = future
        self.write({"id": self.next_id, "method": method, "params": params})
        return await future

    def spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := await reader.readline():
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if "method" not in message:
                future = self.pending.pop(message.get("id"), None)
                if future is not None and not future.done():
                    if "error" in message:
                        future.set_exception(RpcError(message["error"]["code"], message["error"]["message"]))
                    else:
                        future.set_result(message.get("result"))
            elif "id" in message:
                self.spawn(self.answer(message))
            elif message["method"] == "session/cancel" and "ignore-cancel" not in self.broken:
                session = self.sessions.get(message.get("params", {}).get("sessionId"))
                if session is not None:
                    session.cancelled.set()

    async def answer(self, message: dict[str, Any]) -> None:
        handler = getattr(self, "on_" + message["method"].replace("/", "_"), None)
        try:
            if handler is None:
                raise RpcError(-32601, f"Method not found: {message['method']}")
            result = await handler(message.get("params") or {})
        except RpcError as exc:
            self.write({"id": message["id"], "error": {"code": exc.code, "message": exc.message}})
        else:
            self.write({"id": message["id"], "result": result})

    # -- methods -----------------------------------------------------------------------------------------

    def session(self, params: dict[str, Any]) -> Session:
        session = self.sessions.get(params.get("sessionId"))  # type: ignore[arg-type]
        if session is None:
            raise RpcError(-32002, "Resource not found")
        return session

    async def on_initialize(self, params: dict[str, Any]) -> Any:
        if not isinstance(params.get("protocolVersion"), int):
            raise RpcError(-32602, "Invalid params")
        caps = params.get("clientCapabilities") or {}
        fs = caps.get("fs") or {}
        self.fs = bool(fs.get("readTextFile")) or "ignore-capabilities" in self.broken
        self.terminal = bool(caps.get("terminal")) or "ignore-capabilities" in self.broken
        return {
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"embeddedContext": True},
                "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "delete": {}},
            },
            "authMethods": AUTH_METHODS if self.login else [],
            "agentInfo": {"name": "conformance-v1-agent", "version": "1.0.0"},
        }

    async def on_authenticate(self, params: dict[str, Any]) -> Any:
        method = params.get("methodId")
        if not (method == "agent-login" or (method == "key-login" and os.environ.get("V1_AGENT_KEY"))):
            raise RpcError(-32602, "Invalid params")
        self.login = None
        return {}

    def logged_in(self, what: str) -> None:
        if self.login == what:
            raise RpcError(-32000, "Authentication required")

    def state(self, session: Session) -> dict[str, Any]:
        return {
            "modes": {"currentModeId": session.mode, "availableModes": MODES},
            "configOptions": [
                {
                    "id": "model",
                    "name": "Model",
                    "type": "select",
                    "currentValue": session.model,
                    "options": MODELS,
                }
            ],
        }

    async def on_session_new(self, params: dict[str, Any]) -> Any:
        self.logged_in("session")
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd) or not isinstance(params.get("mcpServers"), list):
            raise RpcError(-32602, "Invalid params")
        self.count += 1
        session = Session(f"v1-sess-{self.count}", cwd)
        self.sessions[session.session_id] = session
        return {"sessionId": session.session_id, **self.state(session)}

    async def on_session_list(self, params: dict[str, Any]) -> Any:
        cwd = params.get("cwd")
        listed = [s for s in self.sessions.values() if cwd is None or s.cwd == cwd]
        return {"sessions": [{"sessionId": s.session_id, "cwd": s.cwd} for s in listed]}

    async def on_session_delete(self, params: dict[str, Any]) -> Any:
        session = self.sessions.pop(params.get("sessionId"), None)  # type: ignore[arg-type]
        if session is not None:
            await self.stop(session)
        return {}

    async def on_session_load(self, params: dict[str, Any]) -> Any:
        session = self.session(params)
        if "no-replay" not in self.broken:
            for update in list(session.history):
                self.update(session, update, history=False)
        return self.state(session)

    async def on_session_resume(self, params: dict[str, Any]) -> Any:
        return self.state(self.session(params))

    async def on_session_close(self, params: dict[str, Any]) -> Any:
        session = self.sessions.get(params.get("sessionId"))  # type: ignore[arg-type]
        if session is not None:
            await self.stop(session)
        return {}

    async def stop(self, session: Session) -> None:
        session.cancelled.set()
        if session.turn is not None:
            with contextlib.suppress(Exception):
                await session.turn

    async def on_session_set_mode(self, params: dict[str, Any]) -> Any:
        session = self.session(params)
        if params.get("modeId") not in {m["id"] for m in MODES}:
            raise RpcError(-32602, "Invalid params")
        session.mode = params["modeId"]
        self.update(session, {"sessionUpdate": "current_mode_update", "currentModeId": session.mode}, history=False)
        return {}

    async def on_session_set_config_option(self, params: dict[str, Any]) -> Any:
        session = self.session(params)
        if params.get("configId") != "model" or params.get("value") not in {m["value"] for m in MODELS}:
            raise RpcError(-32602, "Invalid params")
        session.model = params["value"]
        return {"configOptions": self.state(session)["configOptions"]}

    async def on_session_prompt(self, params: dict[str, Any]) -> Any:
        self.logged_in("prompt")
        session = self.session(params)
        if session.turn is not None and not session.turn.done():
            raise RpcError(-32600, "a prompt turn is in progress")
        session.cancelled.clear()
        blocks = params.get("prompt") or []
        for block in blocks:
            self.update(session, {"sessionUpdate": "user_message_chunk", "content": block})
        text = " ".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text").strip()
        session.turn = asyncio.ensure_future(self.turn(session, text))
        reason = await session.turn
        if reason == "cancelled" and "updates-after-cancel" in self.broken:
            self.spawn(self.late_chunk(session))
        return {"stopReason": reason}

    async def late_chunk(self, session: Session) -> None:
        await asyncio.sleep(0)
        self.say(session, "one more thing")

    # -- turns -------------------------------------------------------------------------------------------

    def say(self, session: Session, text: str) -> None:
        self.update(session, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})

    def tool(self, session: Session, **fields: Any) -> str:
        session.tool_calls += 1
        call = f"call-{session.tool_calls}"
        self.update(session, {"sessionUpdate": "tool_call", "toolCallId": call, "status": "pending", **fields})
        return call

    def tool_update(self, session: Session, call: str, status: str, **fields: Any) -> None:
        update = {"sessionUpdate": "tool_call_update", "toolCallId": call, "status": status, **fields}
        self.update(session, update)

    async def turn(self, session: Session, text: str) -> str:
        command, _, rest = text.partition(" ")
        ordinary = "done" if "bad-stop-reason" in self.broken else "end_turn"
        if command == "slow":
            count = int(rest) if rest.isdigit() else 40
            for index in range(count):
                if session.cancelled.is_set():
                    return "cancelled"
                self.say(session, f"chunk {index + 1}. ")
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(session.cancelled.wait(), 0.05)
            return "cancelled" if session.cancelled.is_set() else ordinary
        if command == "permission":
            return await self.permission(session, ordinary)
        if command == "read" and rest and self.fs:
            path = rest if "relative-paths" not in self.broken else os.path.relpath(rest, session.cwd)
            call = self.tool(session, title=f"Read {rest}", kind="read", locations=[{"path": rest}])
            try:
                result = await self.request("fs/read_text_file", {"sessionId": session.session_id, "path": path})
            except RpcError as exc:
                self.tool_update(session, call, "failed")
                self.say(session, f"error: {exc.message}")
                return ordinary
            content = [{"type": "content", "content": {"type": "text", "text": result["content"]}}]
            self.tool_update(session, call, "completed", content=content)
            return ordinary
        if command == "run" and rest and self.terminal:
            return await self.run(session, rest.split(), ordinary)
        if command == "plan":
            entries = [
                {"content": "Read the code", "priority": "high", "status": "in_progress"},
                {"content": "Write the fix", "priority": "medium", "status": "pending"},
            ]
            self.update(session, {"sessionUpdate": "plan", "entries": entries})
            self.say(session, "Planned 2 steps.")
            return ordinary
        self.say(session, f"You said: {text}")
        return ordinary

    async def permission(self, session: Session, ordinary: str) -> str:
        path = os.path.join(session.cwd, "protected.txt")
        call = self.tool(session, title="Touch the protected file", kind="edit", locations=[{"path": path}])
        options = [
            {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ]
        params = {"sessionId": session.session_id, "toolCall": {"toolCallId": call}, "options": options}
        try:
            answer = await self.request("session/request_permission", params)
        except RpcError:
            answer = {"outcome": {"outcome": "cancelled"}}
        outcome = answer.get("outcome") or {}
        if session.cancelled.is_set():
            return "cancelled"
        if outcome.get("outcome") == "selected" and outcome.get("optionId") == "allow":
            self.tool_update(session, call, "completed")
            self.say(session, "allowed")
        else:
            self.tool_update(session, call, "failed")
            self.say(session, "not allowed")
        return ordinary

    async def run(self, session: Session, argv: list[str], ordinary: str) -> str:
        sid = session.session_id
        call = self.tool(session, title="Run " + " ".join(argv), kind="execute")
        created = await self.request(
            "terminal/create", {"sessionId": sid, "command": argv[0], "args": argv[1:], "cwd": session.cwd}
        )
        term = created["terminalId"]
        self.tool_update(session, call, "in_progress", content=[{"type": "terminal", "terminalId": term}])
        exited = await self.request("terminal/wait_for_exit", {"sessionId": sid, "terminalId": term})
        output = await self.request("terminal/output", {"sessionId": sid, "terminalId": term})
        await self.request("terminal/release", {"sessionId": sid, "terminalId": term})
        self.tool_update(session, call, "completed" if exited.get("exitCode") == 0 else "failed")
        self.say(session, output["output"])
        return ordinary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--broken", action="append", default=[], choices=sorted(BROKEN))
    parser.add_argument("--login", choices=("session", "prompt"), help="refuse this until logged in")
    args = parser.parse_args()
    if "junk-stdout" in args.broken:
        sys.stdout.write("v1 agent starting up\n")
        sys.stdout.flush()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(Agent(set(args.broken), args.login).serve())


if __name__ == "__main__":
    main()
