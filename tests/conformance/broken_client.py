"""A small raw ACP client that follows client mode's driver contract, with the deliberate defects --defect names.

Without a defect it passes every client-mode check; each defect must fail exactly its check
(tests/conformance/test_client_mode.py), and defects of different checks given together (``--defect A,B``)
fail exactly the union of their checks. Usage: ``broken_client.py [--defect NAME[,NAME...]] AGENT...``.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from typing import Any

DEFECTS = {
    "bad-schema": "client-schema",  # sends a prompt that is a string, not a list of blocks
    "wrong-version": "client-negotiation",  # keeps speaking v2 after the agent answered 1
    "approve-after-cancel": "client-no-approval-after-cancel",
    "ignores-requests": "client-answers-requests",  # never answers an unknown _ request
    "ungated-fs": "client-gates-capabilities",  # serves fs/read_text_file without advertising it
    "stalls-on-early-update": "client-early-update",
    "strict-decoder": "client-unknown-variants",  # exits on an unknown variant
    "rejects-meta": "client-meta",
    "short-lines": "client-long-line",  # a 64 KiB line limit
    "hangs-on-death": "client-agent-dies",
    "no-close": "client-closes-sessions",
    "logs-in-blindly": "client-login-gating",  # auth/login although no auth method was advertised
    "empty-prompt": "client-schema",  # a prompt of no blocks (ACP2-085)
    "pending-not-cancelled": "client-cancels-pending-permission",  # answers a held request "reject", not cancelled
    "unknown-state-is-idle": "client-unknown-variants",  # takes a state it does not know for the turn's end
    "v1-fields-in-offer": "client-offer-shape",  # v1's clientInfo and clientCapabilities beside a v2 offer
    "ignores-policy": "client-permission-policy",  # approves every request whatever the policy it was given
    "no-initialize": "client-negotiation",  # opens with session/new, no handshake at all
}

KNOWN_UPDATES = {
    "agent_message_chunk", "user_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update",
    "plan", "available_commands_update", "current_mode_update", "state_update", "user_message", "agent_message",
    "config_option_update", "session_info_update",
}  # fmt: skip


class Client:
    def __init__(self, agent: list[str], defects: set[str]) -> None:
        self.defects = defects
        self.scenario = os.environ.get("ACP_CONFORMANCE_SCENARIO", "basic")
        self.proc = subprocess.Popen(agent, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.next_id = 0
        self.version = 2
        self.cancelled = False
        self.session: str | None = None
        self.pending: list[Any] = []  # permission requests held (cancel-pending: the user has not decided yet)
        self.kinds: dict[Any, str] = {}  # tool call id -> kind, from the agent's updates
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            if "short-lines" in self.defects and len(raw) > 65536:
                self.fail("line too long")
            message = json.loads(raw)
            if "rejects-meta" in self.defects and '"_meta"' in raw.decode():
                self.fail("unexpected _meta")
            self.inbox.put(message)
        self.inbox.put(None)

    def fail(self, why: str) -> None:
        print(f"broken client: {why}", file=sys.stderr)
        os._exit(1)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        return self.next_id

    def next(self) -> dict[str, Any]:
        message = self.inbox.get()
        if message is None:
            if "hangs-on-death" in self.defects:
                time.sleep(3600)
            self.fail("the agent exited")
        assert message is not None
        return message

    def wait_answer(self, request_id: int) -> dict[str, Any]:
        while True:
            message = self.next()
            if message.get("id") == request_id and "method" not in message:
                return message
            self.handle(message)

    def handle(self, m: dict[str, Any]) -> bool:
        """Serve one agent message; True when it ends the turn."""
        method = m.get("method")
        if method == "session/update":
            update = m["params"]["update"]
            kind = update.get("sessionUpdate")
            if kind in ("tool_call", "tool_call_update") and "kind" in update:
                self.kinds[update.get("toolCallId")] = update["kind"]
            if self.session is None and "stalls-on-early-update" in self.defects:
                self.fail("an update for a session not opened yet")
            if "strict-decoder" in self.defects and kind not in KNOWN_UPDATES:
                self.fail(f"unknown update {kind}")
            content = update.get("content")
            cancels = self.scenario in ("cancel", "cancel-pending")
            if cancels and not self.cancelled and isinstance(content, dict) and "text" in content:
                self.cancelled = True
                self.send({"method": "session/cancel", "params": {"sessionId": self.session}})
                for request_id in self.pending:
                    if "pending-not-cancelled" in self.defects:
                        outcome = {"outcome": "selected", "optionId": "reject"}
                    else:
                        outcome = {"outcome": "cancelled"}
                    self.send({"id": request_id, "result": {"outcome": outcome}})
            if "unknown-state-is-idle" in self.defects:
                return kind == "state_update" and update.get("state") not in ("running", "requires_action")
            return kind == "state_update" and update.get("state") == "idle"
        if method == "session/request_permission" and self.scenario == "cancel-pending" and not self.cancelled:
            self.pending.append(m["id"])
        elif method == "session/request_permission" and self.scenario == "permission-policy":
            approve = "ignores-policy" in self.defects or self.policy_allows(m["params"])
            outcome = {"outcome": "selected", "optionId": "allow" if approve else "reject"}
            self.send({"id": m["id"], "result": {"outcome": outcome}})
        elif method == "session/request_permission":
            approve = not self.cancelled or "approve-after-cancel" in self.defects
            outcome = {"outcome": "selected", "optionId": "allow"} if approve else {"outcome": "cancelled"}
            self.send({"id": m["id"], "result": {"outcome": outcome}})
        elif method in ("fs/read_text_file",) and "ungated-fs" in self.defects:
            self.send({"id": m["id"], "result": {"content": "served anyway"}})
        elif method is not None and "id" in m and not ("ignores-requests" in self.defects and method.startswith("_")):
            self.send({"id": m["id"], "error": {"code": -32601, "message": f"unknown method {method}"}})
        return False

    def policy_allows(self, params: dict[str, Any]) -> bool:
        """The policy it is given (``allow=KIND deny=*`` words, first match) applied to the request's tool call."""
        call = (params.get("subject") or {}).get("toolCall") or params.get("toolCall") or {}
        kind = self.kinds.get(call.get("toolCallId"), call.get("kind"))
        for word in os.environ.get("ACP_CONFORMANCE_PERMISSION_POLICY", "").split():
            action, _, rule = word.partition("=")
            if rule in ("*", kind):
                return action == "allow"
        return False

    def run(self) -> None:
        if "no-initialize" in self.defects:
            self.wait_answer(self.request("session/new", {"cwd": os.getcwd(), "mcpServers": []}))
            self.fail("session/new without initialize was refused")
        info = {"name": "broken-client", "version": "1.0"}
        offer: dict[str, Any] = {"protocolVersion": 2, "info": info, "capabilities": {}}
        if "v1-fields-in-offer" in self.defects:
            offer.update(clientInfo=info, clientCapabilities={})
        init = self.request("initialize", offer)
        result = self.wait_answer(init)["result"]
        self.version = result["protocolVersion"]
        if "strict-decoder" in self.defects:
            for method in result.get("authMethods", []):
                if method.get("type", "agent") not in ("agent", "env_var", "terminal"):
                    self.fail(f"unknown auth method type {method.get('type')}")
        if "logs-in-blindly" in self.defects:
            method = "auth/login" if self.version >= 2 else "authenticate"
            self.wait_answer(self.request(method, {"methodId": "default"}))
        cwd = os.getcwd()
        v2_shapes = self.version >= 2 or "wrong-version" in self.defects
        new = self.request("session/new", {"cwd": cwd} if v2_shapes else {"cwd": cwd, "mcpServers": []})
        self.session = self.wait_answer(new)["result"]["sessionId"]
        text = os.environ.get("ACP_CONFORMANCE_PROMPT", "hello")
        blocks: Any = text if "bad-schema" in self.defects else [{"type": "text", "text": text}]
        if "empty-prompt" in self.defects:
            blocks = []
        prompt = self.request("session/prompt", {"sessionId": self.session, "prompt": blocks})
        while True:
            m = self.next()
            if m.get("id") == prompt and "method" not in m:
                if self.version == 1:
                    break
                continue
            if self.handle(m) and self.version >= 2:
                break
        if "no-close" not in self.defects:
            self.wait_answer(self.request("session/close", {"sessionId": self.session}))
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=5)


def main() -> None:
    args = sys.argv[1:]
    defects: set[str] = set()
    if args[:1] == ["--defect"]:
        defects, args = set(args[1].split(",")), args[2:]
        assert defects <= set(DEFECTS), defects
    Client(args, defects).run()


if __name__ == "__main__":
    main()
