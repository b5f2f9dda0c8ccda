"""A small v1 ACP agent that asks a model, in raw JSON lines (deliberately not using acp_session).

It reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY the way claude-agent-acp does and drives the Anthropic messages
API (streamed): text deltas become ``agent_message_chunk``; a ``Write`` tool call asks the client's permission and
writes the file (a tool call with a diff), a ``Bash`` call runs the command. ``session/cancel`` stops reading the
model's stream. Sessions are kept as JSON files under $HOME, so ``session/load`` in a new process replays them.
The whole-turn driver's CI test (tests/real_agents/test_turns_driver.py) runs against it.
"""

import json
import os
import queue
import subprocess
import sys
import threading
import urllib.request
import uuid

TOOLS = [
    {"name": "Write", "input_schema": {"type": "object", "properties": {"file_path": {}, "content": {}}}},
    {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {}, "description": {}}}},
]
STORE = os.path.join(os.environ.get("HOME", "."), "model-agent-sessions")
inbox = queue.Queue()
cancelled = threading.Event()
next_id = [1000]


def write(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def update(session_id, body):
    write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": body}})


def read_stdin():
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("method") == "session/cancel":
            cancelled.set()
        else:
            inbox.put(message)
    inbox.put(None)


def ask(method, params):
    """A request to the client; waits for its answer (other messages wait until the prompt ends)."""
    next_id[0] += 1
    write({"jsonrpc": "2.0", "id": next_id[0], "method": method, "params": params})
    deferred = []
    while True:
        message = inbox.get()
        if message is None or (message.get("id") == next_id[0] and "method" not in message):
            for item in deferred:
                inbox.put(item)
            return message or {}
        deferred.append(message)


def stream_model(messages):
    """Yield ("text", str) and ("tool", block) from one streamed model request; stop early on a cancel."""
    body = {"model": "scripted", "max_tokens": 1024, "stream": True, "tools": TOOLS, "messages": messages}
    request = urllib.request.Request(
        os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "x-api-key": os.environ.get("ANTHROPIC_API_KEY", "")},
    )
    tool = None
    with urllib.request.urlopen(request, timeout=30) as response:
        for raw in response:
            if cancelled.is_set():
                return
            line = raw.decode().strip()
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            if event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use":
                tool = dict(event["content_block"], partial="")
            elif event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta":
                yield "text", event["delta"]["text"]
            elif event["type"] == "content_block_delta" and tool is not None:
                tool["partial"] += event["delta"]["partial_json"]
            elif event["type"] == "content_block_stop" and tool is not None:
                tool["input"] = json.loads(tool.pop("partial") or "{}")
                yield "tool", tool
                tool = None


def run_tool(session_id, tool):
    """Run one tool call, reporting it; returns the text the model gets back."""
    args = tool["input"]
    call_id = tool["id"]
    title = f"{tool['name']} {os.path.basename(args.get('file_path', '')) or args.get('command', '')}"
    update(session_id, {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": title, "status": "pending"})
    if tool["name"] == "Write":
        options = [
            {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
            {"optionId": "no", "name": "Reject", "kind": "reject_once"},
        ]
        call = {"toolCallId": call_id, "title": title}
        answer = ask("session/request_permission", {"sessionId": session_id, "toolCall": call, "options": options})
        outcome = (answer.get("result") or {}).get("outcome") or {}
        if outcome.get("optionId") != "yes":
            update(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "failed"})
            return "The user rejected the write."
        with open(args["file_path"], "w") as f:
            f.write(args["content"])
        diff = {"type": "diff", "path": args["file_path"], "oldText": None, "newText": args["content"]}
        done = {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed", "content": [diff]}
        update(session_id, done)
        return "File written."
    proc = subprocess.run(args["command"], shell=True, capture_output=True, text=True, timeout=20)
    output = (proc.stdout + proc.stderr).strip()
    content = [{"type": "content", "content": {"type": "text", "text": output}}]
    done = {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed", "content": content}
    update(session_id, done)
    return output


def prompt(session_id, params):
    path = os.path.join(STORE, session_id + ".json")
    with open(path) as f:
        messages = json.load(f)
    text = "".join(block.get("text", "") for block in params.get("prompt", []))
    messages.append({"role": "user", "content": [{"type": "text", "text": text}]})
    cancelled.clear()
    for _ in range(5):
        said, tools = "", []
        for kind, value in stream_model(messages):
            if kind == "text":
                said += value
                update(session_id, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": value}})
            else:
                tools.append(value)
        if cancelled.is_set():
            return "cancelled"
        blocks = [{"type": "text", "text": said}] if said else []
        blocks += [{"type": "tool_use", "id": t["id"], "name": t["name"], "input": t["input"]} for t in tools]
        messages.append({"role": "assistant", "content": blocks})
        if not tools:
            break
        results = [{"type": "tool_result", "tool_use_id": t["id"], "content": run_tool(session_id, t)} for t in tools]
        messages.append({"role": "user", "content": results})
    with open(path, "w") as f:
        json.dump(messages, f)
    return "end_turn"


def replay(session_id):
    with open(os.path.join(STORE, session_id + ".json")) as f:
        messages = json.load(f)
    for message in messages:
        kind = "user_message_chunk" if message["role"] == "user" else "agent_message_chunk"
        for block in message["content"]:
            if block.get("type") == "text" and block["text"]:
                update(session_id, {"sessionUpdate": kind, "content": {"type": "text", "text": block["text"]}})


def main():
    os.makedirs(STORE, exist_ok=True)
    threading.Thread(target=read_stdin, daemon=True).start()
    while True:
        message = inbox.get()
        if message is None:
            return
        rid, method, params = message.get("id"), message.get("method"), message.get("params") or {}
        if rid is None or method is None:
            continue
        result = None
        if method == "initialize":
            capabilities = {"loadSession": True}
            result = {"protocolVersion": 1, "agentCapabilities": capabilities, "authMethods": []}
        elif method == "session/new":
            session_id = str(uuid.uuid4())
            with open(os.path.join(STORE, session_id + ".json"), "w") as f:
                json.dump([], f)
            result = {"sessionId": session_id}
        elif method == "session/load":
            replay(params["sessionId"])
            result = {}
        elif method == "session/prompt":
            result = {"stopReason": prompt(params["sessionId"], params)}
        if result is None:
            write({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
        else:
            write({"jsonrpc": "2.0", "id": rid, "result": result})


if __name__ == "__main__":
    main()
