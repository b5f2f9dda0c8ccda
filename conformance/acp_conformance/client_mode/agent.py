"""The scripted agent of client mode: plays one scenario against the client that started it, logging every line.

``python -m acp_conformance.client_mode.agent --scenario NAME --version 1|2 --log FILE``. It speaks protocol
``--version`` at most (and 1 when offered 1), writes each line it reads and writes to ``FILE`` (JSON lines:
``{"dir": "in"|"out", "t": seconds, "line": ...}``, plus ``{"event": ...}`` marks), and never judges anything
itself: the runner does, from the log. Plain standard library, so it starts fast.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import threading
import time
from typing import Any, TextIO

WAIT = 3.0  # seconds to wait for the client's next step before giving up on it
LONG_LINE = 2 * 1024 * 1024  # characters of text in the long-line scenario's one update
SESSION_ID = "sess-conformance-1"


class Agent:
    def __init__(self, scenario: str, version: int, log: TextIO) -> None:
        self.scenario = scenario
        self.max_version = version
        self.version = version
        self.log = log
        self.start = time.monotonic()
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.next_id = 0
        self.eof = False
        self.log_lock = threading.Lock()
        self.meta = scenario == "meta"
        threading.Thread(target=self._read, daemon=True).start()

    # -- wire ------------------------------------------------------------------------------------------

    def _log(self, **entry: Any) -> None:
        with self.log_lock:  # the reader thread and the scenario both log; one whole line each, in time order
            if self.log.closed:
                return  # the scenario is over; a late line (the reader's eof) is not needed
            entry["t"] = round(time.monotonic() - self.start, 4)
            self.log.write(json.dumps(entry) + "\n")
            self.log.flush()

    def event(self, name: str, **data: Any) -> None:
        self._log(event=name, **data)

    def _read(self) -> None:
        for raw in sys.stdin.buffer:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self._log(dir="in", line=line)
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                self.inbox.put(message)
        self._log(event="eof")
        self.eof = True
        self.inbox.put(None)

    def send(self, message: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", **message}
        if self.meta:
            message = _with_meta(message)
        line = json.dumps(message, separators=(",", ":"))
        self._log(dir="out", line=line if len(line) < 10000 else line[:10000] + f"... ({len(line)} characters)")
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def receive(self, timeout: float = WAIT) -> dict[str, Any] | None:
        try:
            return self.inbox.get(timeout=timeout)
        except queue.Empty:
            return None

    def request(self, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        self.send({"id": f"agent-{self.next_id}", "method": method, "params": params})
        return self.next_id

    def notify_update(self, update: dict[str, Any]) -> None:
        self.send({"method": "session/update", "params": {"sessionId": SESSION_ID, "update": update}})

    # -- the protocol's common parts -------------------------------------------------------------------

    def answer_initialize(self, message: dict[str, Any]) -> None:
        offered = (message.get("params") or {}).get("protocolVersion")
        self.version = offered if isinstance(offered, int) and 1 <= offered <= self.max_version else self.max_version
        self.event("negotiated", version=self.version, offered=offered)
        if self.version >= 2:
            result: dict[str, Any] = {
                "protocolVersion": self.version,
                "info": {"name": "acp-conformance-client-mode", "version": "1.0"},
                "capabilities": {"session": {}},
                "authMethods": [],
            }
        else:
            result = {
                "protocolVersion": 1,
                "agentInfo": {"name": "acp-conformance-client-mode", "version": "1.0"},
                "agentCapabilities": {"loadSession": False, "sessionCapabilities": {"close": {}}},
                "authMethods": [],
            }
        if self.scenario == "unknown-variants":
            result["authMethods"] = _odd_auth_methods(self.version)
        self.send({"id": message.get("id"), "result": result})

    def chunk(self, text: str) -> dict[str, Any]:
        update: dict[str, Any] = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
        if self.version >= 2:
            update["messageId"] = "msg-agent-1"
        return update

    def state(self, state: str, stop: str | None = None) -> None:
        if self.version >= 2:
            update: dict[str, Any] = {"sessionUpdate": "state_update", "state": state}
            if stop is not None:
                update["stopReason"] = stop
            self.notify_update(update)

    def begin_turn(self, prompt: dict[str, Any]) -> None:
        self.prompt_id = prompt.get("id")
        if self.version >= 2:
            self.send({"id": self.prompt_id, "result": {"messageId": "msg-user-1"}})
            self.state("running")

    def end_turn(self, stop: str = "end_turn") -> None:
        # Marked before it is sent: the client's reaction (read by another thread) is logged after the mark.
        self.event("turn-ended", stopReason=stop)
        if self.version >= 2:
            self.state("idle", stop)
        else:
            self.send({"id": self.prompt_id, "result": {"stopReason": stop}})

    def wait_for(self, *methods: str, response_to: str | None = None, timeout: float = WAIT) -> dict[str, Any] | None:
        """The next message with one of ``methods`` (or the answer to request ``response_to``); others are
        answered generically (unknown requests get -32601) and logged."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            message = self.receive(left)
            if message is None:
                if self.eof:
                    self.inbox.put(None)  # every later wait ends at once too
                    return None
                continue
            if message.get("method") in methods:
                return message
            if response_to is not None and message.get("id") == response_to and "method" not in message:
                return message
            self.answer_other(message)
        self.event("timeout", waiting_for=list(methods) or response_to)
        return None

    def answer_other(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method == "initialize" and "id" in message:
            self.answer_initialize(message)  # a repeated initialize (a client offering v1 after 2) is answered too
        elif method == "session/close":
            self.send({"id": message.get("id"), "result": {}})
            self.event("closed")
        elif method is not None and "id" in message:
            self.send({"id": message.get("id"), "error": {"code": -32601, "message": f"method not found: {method}"}})

    # -- the scenario --------------------------------------------------------------------------------------

    def run(self) -> None:
        init = self.wait_for("initialize", timeout=10)
        if init is None:
            return
        self.answer_initialize(init)
        new = self.wait_for("session/new", timeout=10)
        if new is None:
            return
        if self.scenario == "early-update":
            # The session's first update before the answer that names the session: allowed, and editors stall.
            self.notify_update(
                {"sessionUpdate": "available_commands_update", "availableCommands": [_command(self.version)]}
            )
        result: dict[str, Any] = {"sessionId": SESSION_ID}
        if self.version >= 2:
            result["configOptions"] = []
        self.send({"id": new.get("id"), "result": result})
        prompt = self.wait_for("session/prompt", timeout=10)
        if prompt is None:
            return
        self.event("prompted")
        self.begin_turn(prompt)
        getattr(self, "turn_" + self.scenario.replace("-", "_"), self.turn_basic)()
        # After the turn: the client may close the session; stay until it does or its stdin closes.
        self.wait_for("__never__", timeout=WAIT)

    def turn_basic(self) -> None:
        self.notify_update(self.chunk("Hello from the scripted agent."))
        self.end_turn()

    turn_early_update = turn_basic
    turn_meta = turn_basic

    def turn_unknown_variants(self) -> None:
        self.notify_update({"sessionUpdate": "_vendor_progress", "percent": 40})
        self.notify_update({"sessionUpdate": "future_kind_of_update", "payload": {"x": 1}})
        tool: dict[str, Any] = {
            "sessionUpdate": "tool_call" if self.version == 1 else "tool_call_update",
            "toolCallId": "call-1",
            "title": "A tool of a future kind",
            "kind": "future_kind",
            "status": "pending",
        }
        self.notify_update(tool)
        self.notify_update({**self.chunk("x"), "content": {"type": "future_block", "data": "?"}})
        if self.version >= 2:  # a state from a future version: not the end of the turn (ACP2-058)
            self.notify_update({"sessionUpdate": "state_update", "state": "future_state"})
            time.sleep(0.3)
        self.notify_update(self.chunk("Survived the unknown variants."))
        self.end_turn()

    def turn_long_line(self) -> None:
        self.notify_update(self.chunk("L" * LONG_LINE))
        self.notify_update(self.chunk("After the long line."))
        self.end_turn()

    def permission_params(self) -> dict[str, Any]:
        options = [
            {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ]
        if self.version >= 2:
            return {"sessionId": SESSION_ID, "title": "Write README.md?", "options": options}
        tool = {"toolCallId": "call-perm", "title": "Write README.md", "kind": "edit", "status": "pending"}
        return {"sessionId": SESSION_ID, "toolCall": tool, "options": options}

    def turn_permission(self) -> None:
        if self.version == 1:
            self.notify_update(
                {"sessionUpdate": "tool_call", "toolCallId": "call-perm", "title": "Write README.md", "kind": "edit"}
            )
        asked = self.request("session/request_permission", self.permission_params())
        self.wait_for(response_to=f"agent-{asked}")
        # An extension request the client does not know: it must answer it (an error is the usual answer).
        ext = self.request("_acp_conformance/ping", {"sessionId": SESSION_ID})
        self.wait_for(response_to=f"agent-{ext}")
        self.notify_update(self.chunk("Permission answered."))
        self.end_turn()

    def turn_cancel(self) -> None:
        self.notify_update(self.chunk("Working... (cancel me)"))
        cancel = self.wait_for("session/cancel", timeout=WAIT)
        if cancel is None:
            self.end_turn()
            return
        self.event("cancel-received")
        # A permission request that arrives after the client cancelled: it must not be approved.
        if self.version == 1:
            self.notify_update(
                {"sessionUpdate": "tool_call", "toolCallId": "call-perm", "title": "Write README.md", "kind": "edit"}
            )
        asked = self.request("session/request_permission", self.permission_params())
        self.wait_for(response_to=f"agent-{asked}", timeout=2.0)
        self.end_turn("cancelled")

    def turn_cancel_pending(self) -> None:
        if self.version == 1:
            self.notify_update(
                {"sessionUpdate": "tool_call", "toolCallId": "call-perm", "title": "Write README.md", "kind": "edit"}
            )
        request_id = f"agent-{self.request('session/request_permission', self.permission_params())}"
        # The user has not answered yet when they cancel the turn: the pending request must end "cancelled".
        self.notify_update(self.chunk("Waiting for your answer... (cancel me)"))
        first = self.wait_for("session/cancel", response_to=request_id, timeout=WAIT)
        if first is None:
            self.end_turn()
            return
        if "method" not in first:  # answered first (a client may answer "cancelled" as it cancels)
            self.wait_for("session/cancel", timeout=WAIT)
            self.end_turn("cancelled")
            return
        self.event("cancel-received")
        if self.version >= 2:  # v2: the agent withdraws the requests of the cancelled work (ACP2-003, ACP2-092)
            self.send({"method": "$/cancel_request", "params": {"requestId": request_id}})
        self.wait_for(response_to=request_id, timeout=2.0)
        self.end_turn("cancelled")

    def turn_permission_policy(self) -> None:
        """Ask about a read, an edit and a command, one after another; the driver answers by the policy in
        ``ACP_CONFORMANCE_PERMISSION_POLICY`` (the judge compares each answer with it)."""
        cwd = os.getcwd()
        asks = [
            ("call-read", "read", "Read README.md", os.path.join(cwd, "README.md")),
            ("call-edit", "edit", "Edit out.txt", os.path.join(cwd, "out.txt")),
            ("call-execute", "execute", "Run rm -rf build", None),
        ]
        options = [
            {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ]
        for call, kind, title, path in asks:
            tool: dict[str, Any] = {"toolCallId": call, "title": title, "kind": kind, "status": "pending"}
            if path is not None:
                tool["locations"] = [{"path": path}]
            self.notify_update({"sessionUpdate": "tool_call" if self.version == 1 else "tool_call_update", **tool})
            if self.version >= 2:
                params: dict[str, Any] = {
                    "sessionId": SESSION_ID,
                    "title": f"{title}?",
                    "options": options,
                    "subject": {"type": "tool_call", "toolCall": {"toolCallId": call}},
                }
            else:
                params = {"sessionId": SESSION_ID, "toolCall": tool, "options": options}
            asked = self.request("session/request_permission", params)
            self.wait_for(response_to=f"agent-{asked}")
        self.notify_update(self.chunk("Asked about a read, an edit and a command."))
        self.end_turn()

    def turn_client_methods(self) -> None:
        cwd = os.getcwd()
        for method, params in (
            ("fs/read_text_file", {"sessionId": SESSION_ID, "path": os.path.join(cwd, "README.md")}),
            ("fs/write_text_file", {"sessionId": SESSION_ID, "path": os.path.join(cwd, "out.txt"), "content": "x"}),
            ("terminal/create", {"sessionId": SESSION_ID, "command": "true", "cwd": cwd}),
        ):
            asked = self.request(method, params)
            self.wait_for(response_to=f"agent-{asked}")
        self.notify_update(self.chunk("Called the client's methods."))
        self.end_turn()

    def turn_agent_dies(self) -> None:
        self.notify_update(self.chunk("About to die mid-turn."))
        self.event("dying")
        with self.log_lock:  # every logged line is flushed; no other thread writes after this
            os._exit(1)


def _command(version: int) -> dict[str, Any]:
    return {"name": "review", "description": "Review the changes"}


def _odd_auth_methods(version: int) -> list[dict[str, Any]]:
    """Auth methods a strict decoder may trip on: a custom type, a type from a future version, extra fields."""
    key = "methodId" if version >= 2 else "id"
    methods: list[dict[str, Any]] = [
        {key: "vendor-sso", "name": "Vendor SSO", "type": "_vendor_sso", "url": "https://example.invalid"},
        {key: "future", "name": "A future login", "type": "future_login_kind", "extra": {"nested": [1, 2]}},
    ]
    if version >= 2:
        methods.insert(0, {key: "plain", "name": "Plain", "type": "agent"})
    return methods


def _with_meta(value: Any) -> Any:
    """``value`` with a ``_meta`` object added to every object in it (params, results, updates, blocks)."""
    if isinstance(value, dict):
        out = {k: _with_meta(v) for k, v in value.items()}
        if "jsonrpc" not in out and "_meta" not in out:
            out["_meta"] = {"acp-conformance/tag": "unknown keys must be ignored", "traceparent": "00-1-2-01"}
        return out
    if isinstance(value, list):
        return [_with_meta(v) for v in value]
    return value


def main() -> None:
    parser = argparse.ArgumentParser(prog="acp-conformance-client-agent")
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--version", type=int, choices=(1, 2), default=2)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    with open(args.log, "a", encoding="utf-8") as log:
        agent = Agent(args.scenario, args.version, log)
        agent.event("started", scenario=args.scenario, version=args.version)
        agent.run()
        agent.event("done")
        with agent.log_lock:
            log.close()


if __name__ == "__main__":
    main()
