"""A small hand-written ACP v1 client speaking raw JSON lines to an agent process (no acp_session code).

It exists to learn and pin down how third-party v1 agents behave on the wire. Every line sent or received is kept
in ``wire`` as ``{"from": "client"|"agent", "msg": {...}}`` (the format of the files under recordings/).

Requests from the agent are answered by ``handlers`` (method -> callable returning the ``result``); a handler may
raise :class:`RawError` to answer with a JSON-RPC error, or return :data:`DEFER` to leave the request unanswered
until the test calls :meth:`RawV1Client.respond`. Unhandled methods get -32601. The defaults answer the file system
and terminal methods with canned values (see :func:`canned_handlers`) and select the first ``allow_once`` option.

Run as a script to drive an agent by hand: ``python tests/interop/raw_v1_client.py -- node agent.js``.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Msg = dict[str, Any]
Handler = Callable[["RawV1Client", Msg], Any]

DEFER = object()

V1_CLIENT_CAPABILITIES: Msg = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
V1_CLIENT_INFO: Msg = {"name": "raw-v1-client", "title": "Raw v1 client", "version": "0.1.0"}

CANNED_FILE = "line one\nline two\n"
CANNED_OUTPUT = "hello from the terminal\n"


class RawError(Exception):
    """Raised by a handler: the agent's request is answered with this JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class AgentError(Exception):
    """The agent answered one of our requests with a JSON-RPC error."""

    def __init__(self, error: Msg) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.error = error


def canned_handlers(
    file_text: str = CANNED_FILE, output: str = CANNED_OUTPUT, exit_code: int = 0, permission: str | None = "allow_once"
) -> dict[str, Handler]:
    """Answers for the v1 client methods: fs reads give ``file_text``, a terminal exits ``exit_code`` with ``output``.

    ``permission`` is the option kind to select (the first option of that kind), or None to answer ``cancelled``.
    """
    terminals = 0

    def create(_client: RawV1Client, _msg: Msg) -> Msg:
        nonlocal terminals
        terminals += 1
        return {"terminalId": f"term-{terminals}"}

    def choose(_client: RawV1Client, msg: Msg) -> Msg:
        return permission_outcome(msg, permission)

    return {
        "fs/read_text_file": lambda _c, _m: {"content": file_text},
        "fs/write_text_file": lambda _c, _m: {},
        "terminal/create": create,
        "terminal/wait_for_exit": lambda _c, _m: {"exitCode": exit_code, "signal": None},
        "terminal/output": lambda _c, _m: {
            "output": output,
            "truncated": False,
            "exitStatus": {"exitCode": exit_code, "signal": None},
        },
        "terminal/release": lambda _c, _m: {},
        "terminal/kill": lambda _c, _m: {},
        "session/request_permission": choose,
    }


def permission_outcome(request: Msg, kind: str | None) -> Msg:
    """The ``session/request_permission`` result selecting the first option of ``kind`` (None: cancelled)."""
    if kind is None:
        return {"outcome": {"outcome": "cancelled"}}
    for option in request["params"]["options"]:
        if option["kind"] == kind:
            return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}
    raise RawError(-32602, f"no option of kind {kind}")


class RawV1Client:
    """One agent process driven over its stdin/stdout with raw JSON lines."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        handlers: dict[str, Handler] | None = None,
        cwd: str | Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.handlers: dict[str, Handler] = canned_handlers() if handlers is None else handlers
        self.wire: list[Msg] = []
        self.stderr_lines: list[str] = []
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._next_id = 0
        self._closed = False
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._err_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._err_reader.start()

    # -- sending ---------------------------------------------------------------------------------------------------

    def _send(self, msg: Msg) -> None:
        line = json.dumps(msg, separators=(",", ":")) + "\n"
        assert self.proc.stdin is not None
        with self._write_lock:
            with self._cond:
                self.wire.append({"from": "client", "msg": msg})
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()

    def send_request(self, method: str, params: Any) -> int:
        """Send a request without waiting; returns its id (0, 1, 2, ...)."""
        with self._cond:
            request_id = self._next_id
            self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def respond(self, request_id: Any, result: Any = None, *, error: Msg | None = None) -> None:
        """Answer a request of the agent (one left unanswered by a handler that returned DEFER)."""
        if error is not None:
            self._send({"jsonrpc": "2.0", "id": request_id, "error": error})
        else:
            self._send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def request(self, method: str, params: Any, timeout: float = 30.0) -> Any:
        """Send a request and wait for its answer: the result, or :class:`AgentError`."""
        answer = self.wait_response(self.send_request(method, params), timeout)
        if "error" in answer:
            raise AgentError(answer["error"])
        return answer["result"]

    # -- receiving -------------------------------------------------------------------------------------------------

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode().strip()
            if not line:
                continue
            msg = json.loads(line)
            with self._cond:
                self.wire.append({"from": "agent", "msg": msg})
                self._cond.notify_all()
            if "method" in msg and "id" in msg:
                self._answer(msg)
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr_lines.append(raw.decode(errors="replace").rstrip("\n"))

    def _answer(self, msg: Msg) -> None:
        handler = self.handlers.get(msg["method"])
        if handler is None:
            self._reply(msg["id"], error={"code": -32601, "message": f"Method not found: {msg['method']}"})
            return
        try:
            result = handler(self, msg)
        except RawError as exc:
            error: Msg = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            self._reply(msg["id"], error=error)
            return
        if result is not DEFER:
            self._reply(msg["id"], result)

    def _reply(self, request_id: Any, result: Any = None, *, error: Msg | None = None) -> None:
        # After we close the agent's stdin it may go on with its turn (the TS example agent does): drop the answers.
        with contextlib.suppress(BrokenPipeError, ValueError):
            self.respond(request_id, result, error=error)

    def received(self) -> list[Msg]:
        with self._cond:
            return [row["msg"] for row in self.wire if row["from"] == "agent"]

    def wait_for(self, predicate: Callable[[Msg], bool], timeout: float = 30.0) -> Msg:
        """The first message from the agent matching ``predicate`` (waiting for it if need be)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for row in self.wire:
                    if row["from"] == "agent" and predicate(row["msg"]):
                        return row["msg"]
                remaining = deadline - time.monotonic()
                if self._closed or remaining <= 0:
                    raise TimeoutError(f"no matching message from the agent; stderr: {self.stderr_lines[-5:]}")
                self._cond.wait(remaining)

    def wait_response(self, request_id: int, timeout: float = 30.0) -> Msg:
        return self.wait_for(lambda m: "method" not in m and m.get("id") == request_id, timeout)

    def wait_request(self, method: str, timeout: float = 30.0) -> Msg:
        return self.wait_for(lambda m: m.get("method") == method and "id" in m, timeout)

    def updates(self, session_id: str | None = None) -> list[Msg]:
        """The ``update`` objects of every ``session/update`` so far (of one session, if given)."""
        return [
            m["params"]["update"]
            for m in self.received()
            if m.get("method") == "session/update" and session_id in (None, m["params"]["sessionId"])
        ]

    def agent_requests(self, method: str | None = None) -> list[Msg]:
        return [m for m in self.received() if "method" in m and "id" in m and method in (None, m["method"])]

    # -- the usual steps -------------------------------------------------------------------------------------------

    def initialize(self, protocol_version: int = 1, capabilities: Msg | None = None) -> Any:
        return self.request(
            "initialize",
            {
                "protocolVersion": protocol_version,
                "clientCapabilities": V1_CLIENT_CAPABILITIES if capabilities is None else capabilities,
                "clientInfo": V1_CLIENT_INFO,
            },
        )

    def new_session(self, cwd: str = "/tmp", mcp_servers: list[Msg] | None = None) -> Any:
        return self.request("session/new", {"cwd": cwd, "mcpServers": mcp_servers or []})

    def prompt(self, session_id: str, text: str, timeout: float = 30.0) -> Any:
        return self.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}, timeout
        )

    def send_prompt(self, session_id: str, text: str) -> int:
        return self.send_request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )

    # -- ending and saving -----------------------------------------------------------------------------------------

    def close(self, timeout: float = 10.0) -> int:
        """Close the agent's stdin and wait for it to exit (killing it after ``timeout``); its return code."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._reader.join(5)
        self._err_reader.join(5)
        return code

    def __enter__(self) -> RawV1Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def save(self, path: str | Path) -> None:
        """Write the wire so far as JSON lines (``{"from": ..., "msg": ...}``)."""
        with self._cond:
            rows = list(self.wire)
        Path(path).write_text("".join(json.dumps(row, separators=(",", ":")) + "\n" for row in rows))


def load_recording(path: str | Path) -> list[Msg]:
    """The rows of a recording written by :meth:`RawV1Client.save`."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def main(argv: list[str]) -> int:
    """Drive an agent through initialize, session/new and one prompt (the text after ``--prompt``); print the wire."""
    if "--" not in argv:
        print("usage: raw_v1_client.py [--prompt TEXT] -- AGENT ARGV...", file=sys.stderr)
        return 2
    split = argv.index("--")
    options, agent = argv[:split], argv[split + 1 :]
    text = options[options.index("--prompt") + 1] if "--prompt" in options else "hello"
    with RawV1Client(agent) as client:
        client.initialize()
        session = client.new_session()
        client.prompt(session["sessionId"], text)
    for row in client.wire:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
