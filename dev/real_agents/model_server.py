"""Scripted model endpoints on 127.0.0.1: OpenAI-, Anthropic- and Gemini-compatible, streaming SSE.

One ``ModelServer`` serves, on one port:

- ``POST /v1/chat/completions`` (OpenAI chat completions; ``stream`` or not),
- ``POST /v1/responses`` (the OpenAI Responses API as codex uses it: ``function_call`` and freeform
  ``custom_tool_call`` items, ``response.completed`` with usage),
- ``POST /v1/messages`` (Anthropic messages; ``stream`` or not) and ``POST /v1/messages/count_tokens``,
- ``POST /v1beta/models/MODEL:streamGenerateContent`` (SSE), ``:generateContent`` and ``:countTokens`` (the
  Gemini API, as gemini-cli uses it),
- ``GET /v1/models`` (a one-model listing),

each replying by the script (``dev.real_agents.script``). Every request is logged (``requests``): the path, the
scenario and step it got, the system text, whether the client hung up during a streamed reply (a cancel). Runs
in a thread of its own (``with ModelServer() as server: server.url``) so it serves agents whatever event loop
the caller runs. Accepts any key: it is a local fake, bound to 127.0.0.1 only.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .script import Reply, ToolChoice, Turn, reply_for

__all__ = ["MODEL", "ModelServer", "RequestLog", "anthropic_turn", "chat_turn", "gemini_turn", "responses_turn"]

MODEL = "scripted-model"


@dataclass
class RequestLog:
    """One request the server answered."""

    path: str
    api: str
    scenario: str | None = None
    step: int = 0
    tool: str | None = None
    offered: dict[str, tuple[str, ...]] = field(default_factory=dict)  # tool name -> its parameter names
    result: str = ""  # the last tool result the request sent back
    system: str = ""
    stream: bool = False
    hung_up: bool = False
    status: int = 200
    started: float = field(default_factory=time.monotonic)


# -- reading a request into a Turn --------------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    """The text of a content value: a string, or a list of blocks with ``text``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(block.get("text", "")) for block in content if isinstance(block, Mapping))
    return ""


def _params(schema: Any) -> list[str]:
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return list(props) if isinstance(props, Mapping) else []


def _add_user(users: list[tuple[str, int]], text: str) -> None:
    users.append((text, 0))


def _add_call(users: list[tuple[str, int]]) -> None:
    if users:
        text, calls = users[-1]
        users[-1] = (text, calls + 1)


def anthropic_turn(body: Mapping[str, Any]) -> Turn:
    """A messages-API request: user text blocks, ``tool_use`` blocks of the assistant, ``tool_result`` blocks."""
    users: list[tuple[str, int]] = []
    results: list[str] = []
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            kind = block.get("type")
            if message.get("role") == "user" and kind == "text":
                _add_user(users, str(block.get("text", "")))
            elif message.get("role") == "assistant" and kind == "tool_use":
                _add_call(users)
            elif kind == "tool_result":
                results.append(_text_of(block.get("content")))
    tools = {t["name"]: _params(t.get("input_schema")) for t in body.get("tools") or [] if "name" in t}
    return Turn(users, tools, results)


def chat_turn(body: Mapping[str, Any]) -> Turn:
    """A chat-completions request: ``user`` messages, ``tool_calls`` of assistant messages, ``tool`` messages."""
    users: list[tuple[str, int]] = []
    results: list[str] = []
    for message in body.get("messages") or []:
        role = message.get("role")
        if role == "user":
            _add_user(users, _text_of(message.get("content")))
        elif role == "assistant":
            for _ in message.get("tool_calls") or []:
                _add_call(users)
        elif role == "tool":
            results.append(_text_of(message.get("content")))
    tools: dict[str, list[str]] = {}
    for tool in body.get("tools") or []:
        function = tool.get("function") or {}
        if "name" in function:
            tools[function["name"]] = _params(function.get("parameters"))
    return Turn(users, tools, results)


def responses_turn(body: Mapping[str, Any]) -> Turn:
    """A Responses-API request: ``input`` items (user messages, function / custom tool calls and outputs)."""
    users: list[tuple[str, int]] = []
    results: list[str] = []
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for item in items or []:
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "user":
            _add_user(users, _text_of(item.get("content")))
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            _add_call(users)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            results.append(output if isinstance(output, str) else _text_of(output) or json.dumps(output))
    tools: dict[str, list[str]] = {}
    for tool in body.get("tools") or []:
        if tool.get("type") == "function" and "name" in tool:
            tools[tool["name"]] = _params(tool.get("parameters"))
        elif tool.get("type") == "custom" and "name" in tool:
            tools[tool["name"]] = []  # freeform: its input is text
        elif tool.get("type") == "local_shell":
            tools["local_shell"] = ["command"]
    return Turn(users, tools, results)


def gemini_turn(body: Mapping[str, Any]) -> Turn:
    """A Gemini API request: ``contents`` with text, ``functionCall`` and ``functionResponse`` parts."""
    users: list[tuple[str, int]] = []
    results: list[str] = []
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            if content.get("role", "user") == "user" and "text" in part:
                _add_user(users, str(part["text"]))
            elif "functionCall" in part:
                _add_call(users)
            elif "functionResponse" in part:
                response = (part["functionResponse"] or {}).get("response")
                results.append(json.dumps(response) if not isinstance(response, str) else response)
    tools: dict[str, list[str]] = {}
    for tool in body.get("tools") or []:
        for declaration in tool.get("functionDeclarations") or []:
            if "name" in declaration:
                schema = declaration.get("parametersJsonSchema") or declaration.get("parameters")
                tools[declaration["name"]] = _params(schema)
    return Turn(users, tools, results)


def _system_text(api: str, body: Mapping[str, Any]) -> str:
    if api == "anthropic":
        return _text_of(body.get("system"))
    if api == "gemini":
        return _text_of((body.get("systemInstruction") or {}).get("parts"))
    if api == "responses":
        parts = [str(body.get("instructions") or "")]
        for item in body.get("input") or []:
            if isinstance(item, Mapping) and item.get("role") in ("system", "developer"):
                parts.append(_text_of(item.get("content")))
        return "\n".join(p for p in parts if p)
    return "\n".join(_text_of(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "system")


# -- writing a reply ----------------------------------------------------------------------------------------------


def value_of_schema(schema: Mapping[str, Any]) -> Any:
    """A small value that a JSON schema accepts: each required property, the first enum value, an empty list."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        required = schema.get("required") or list(props)
        return {name: value_of_schema(props.get(name) or {}) for name in required}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    return "scripted"


def _usage_numbers(body_size: int, reply: Reply) -> tuple[int, int]:
    out = max(1, len(reply.text) // 4) + (20 if reply.tool is not None else 0)
    return max(1, body_size // 4), out


def _arguments(tool: ToolChoice) -> str:
    return json.dumps(dict(tool.arguments))


class _Stream:
    """Server-sent events onto a handler's socket; ``alive`` turns False once the client hangs up."""

    def __init__(self, handler: BaseHTTPRequestHandler, log: RequestLog) -> None:
        self.handler = handler
        self.log = log
        self.alive = True

    def send(self, data: Any, event: str | None = None) -> bool:
        if not self.alive:
            return False
        text = (
            f"event: {event}\n" if event else ""
        ) + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
        try:
            self.handler.wfile.write(text.encode())
            self.handler.wfile.flush()
        except OSError:  # BrokenPipeError, ConnectionResetError: the client hung up (a cancel)
            self.alive = False
            self.log.hung_up = True
        return self.alive


def _pieces(reply: Reply, stop: threading.Event) -> Iterator[str]:
    for index, piece in enumerate(reply.pieces()):
        if index and reply.delay and stop.wait(reply.delay):
            return
        yield piece


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the server keeps its own log

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/models"):
            self.server.record(RequestLog(self.path, "models"))
            now = int(time.time())
            self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "created": now}]})
        else:
            self.server.record(RequestLog(self.path, "unknown", status=404))
            self._json(404, {"error": {"message": f"no such endpoint {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        size = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(size) if size else b""
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            self.server.record(RequestLog(self.path, "bad", status=400))
            self._json(400, {"error": {"message": f"bad JSON: {exc}", "type": "invalid_request_error"}})
            return
        if path.endswith("/messages/count_tokens"):
            self.server.record(RequestLog(self.path, "count_tokens"))
            self._json(200, {"input_tokens": max(1, len(raw) // 4)})
            return
        if path.endswith(":countTokens"):
            self.server.record(RequestLog(self.path, "count_tokens"))
            self._json(200, {"totalTokens": max(1, len(raw) // 4)})
            return
        apis = {
            "/chat/completions": "chat",
            "/responses": "responses",
            "/messages": "anthropic",
            ":streamGenerateContent": "gemini",
            ":generateContent": "gemini",
        }
        api = next((name for suffix, name in apis.items() if path.endswith(suffix)), None)
        if api is None:
            self.server.record(RequestLog(self.path, "unknown", status=404))
            self._json(404, {"error": {"message": f"no such endpoint {self.path}", "type": "not_found"}})
            return
        turns = {"chat": chat_turn, "responses": responses_turn, "anthropic": anthropic_turn, "gemini": gemini_turn}
        turn = turns[api](body)
        reply = reply_for(turn)
        log = RequestLog(
            self.path,
            api,
            scenario=reply.scenario,
            step=reply.step,
            tool=reply.tool.name if reply.tool else None,
            offered={name: tuple(params) for name, params in turn.tools.items()},
            result=turn.tool_results[-1] if turn.tool_results else "",
            system=_system_text(api, body),
            stream=path.endswith(":streamGenerateContent") or bool(body.get("stream", api == "responses")),
        )
        self.server.record(log)
        usage = _usage_numbers(len(raw), reply)
        writers = {
            "chat": self._chat,
            "responses": self._responses,
            "anthropic": self._anthropic,
            "gemini": self._gemini,
        }
        writer = writers[api]
        writer(body, reply, usage, log)

    # -- OpenAI chat completions --

    def _chat(self, body: Mapping[str, Any], reply: Reply, usage: tuple[int, int], log: RequestLog) -> None:
        cid = self.server.new_id("chatcmpl")
        model = str(body.get("model") or MODEL)
        numbers = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
        call = None
        if reply.tool is not None:
            call = {
                "id": self.server.new_id("call"),
                "type": "function",
                "function": {"name": reply.tool.name, "arguments": _arguments(reply.tool)},
            }
        finish = "tool_calls" if call else "stop"
        if not log.stream:
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
            if call:
                message["tool_calls"] = [call]
            choice = {"index": 0, "message": message, "finish_reason": finish}
            payload = {"id": cid, "object": "chat.completion", "created": int(time.time()), "model": model}
            self._json(200, {**payload, "choices": [choice], "usage": numbers})
            return
        self._start_stream()
        out = _Stream(self, log)
        base = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

        out.send(chunk({"role": "assistant", "content": ""}))
        for piece in _pieces(reply, self.server.stopping):
            if not out.send(chunk({"content": piece})):
                return
        if call:
            out.send(chunk({"tool_calls": [{"index": 0, **call}]}))
        out.send(chunk({}, finish))
        if body.get("stream_options", {}).get("include_usage"):
            out.send({**base, "choices": [], "usage": numbers})
        out.send("[DONE]")

    # -- OpenAI Responses API --

    def _responses(self, body: Mapping[str, Any], reply: Reply, usage: tuple[int, int], log: RequestLog) -> None:
        rid = self.server.new_id("resp")
        model = str(body.get("model") or MODEL)
        numbers = {
            "input_tokens": usage[0],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage[1],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": sum(usage),
        }
        items: list[dict[str, Any]] = []
        if reply.text:
            text_item = {
                "type": "message",
                "id": self.server.new_id("msg"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
            items.append(text_item)
        if reply.tool is not None:
            call_id = self.server.new_id("call")
            if reply.tool.freeform:
                tool_item = {
                    "type": "custom_tool_call",
                    "id": self.server.new_id("ctc"),
                    "call_id": call_id,
                    "name": reply.tool.name,
                    "input": str(reply.tool.arguments.get("input", "")),
                    "status": "completed",
                }
            else:
                tool_item = {
                    "type": "function_call",
                    "id": self.server.new_id("fc"),
                    "call_id": call_id,
                    "name": reply.tool.name,
                    "arguments": _arguments(reply.tool),
                    "status": "completed",
                }
            items.append(tool_item)
        response: dict[str, Any] = {"id": rid, "object": "response", "created_at": int(time.time()), "model": model}
        if not log.stream:
            self._json(200, {**response, "status": "completed", "output": items, "usage": numbers})
            return
        self._start_stream()
        out = _Stream(self, log)
        seq = iter(range(1 << 30))

        def send(kind: str, **fields: Any) -> bool:
            return out.send({"type": kind, "sequence_number": next(seq), **fields}, event=kind)

        send("response.created", response={**response, "status": "in_progress", "output": []})
        for index, item in enumerate(items):
            if item["type"] == "message":
                send("response.output_item.added", output_index=index, item={**item, "content": []})
                for piece in _pieces(reply, self.server.stopping):
                    sent = send(
                        "response.output_text.delta",
                        item_id=item["id"],
                        output_index=index,
                        content_index=0,
                        delta=piece,
                    )
                    if not sent:
                        return
            else:
                send("response.output_item.added", output_index=index, item=item)
            send("response.output_item.done", output_index=index, item=item)
        done = {**response, "status": "completed", "output": items, "usage": numbers}
        send("response.completed", response=done)

    # -- Anthropic messages --

    def _anthropic(self, body: Mapping[str, Any], reply: Reply, usage: tuple[int, int], log: RequestLog) -> None:
        mid = self.server.new_id("msg")
        model = str(body.get("model") or MODEL)
        blocks: list[dict[str, Any]] = []
        if reply.text:
            blocks.append({"type": "text", "text": reply.text})
        if reply.tool is not None:
            tool_id = self.server.new_id("toolu")
            blocks.append(
                {"type": "tool_use", "id": tool_id, "name": reply.tool.name, "input": dict(reply.tool.arguments)}
            )
        stop = "tool_use" if reply.tool is not None else "end_turn"
        numbers = {"input_tokens": usage[0], "output_tokens": usage[1], "cache_read_input_tokens": 0}
        message = {"id": mid, "type": "message", "role": "assistant", "model": model, "stop_sequence": None}
        if not log.stream:
            self._json(200, {**message, "content": blocks, "stop_reason": stop, "usage": numbers})
            return
        self._start_stream()
        out = _Stream(self, log)
        start_usage = {"input_tokens": usage[0], "output_tokens": 1, "cache_read_input_tokens": 0}
        opening: dict[str, Any] = {**message, "content": [], "stop_reason": None, "usage": start_usage}
        out.send({"type": "message_start", "message": opening}, event="message_start")
        for index, block in enumerate(blocks):
            empty = {"type": "text", "text": ""} if block["type"] == "text" else {**block, "input": {}}
            out.send(
                {"type": "content_block_start", "index": index, "content_block": empty}, event="content_block_start"
            )
            if block["type"] == "text":
                for piece in _pieces(reply, self.server.stopping):
                    delta = {"type": "text_delta", "text": piece}
                    if not out.send(
                        {"type": "content_block_delta", "index": index, "delta": delta}, event="content_block_delta"
                    ):
                        return
            else:
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                out.send({"type": "content_block_delta", "index": index, "delta": delta}, event="content_block_delta")
            out.send({"type": "content_block_stop", "index": index}, event="content_block_stop")
        end = {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": usage[1]},
        }
        out.send(end, event="message_delta")
        out.send({"type": "message_stop"}, event="message_stop")

    # -- Gemini API --

    def _gemini(self, body: Mapping[str, Any], reply: Reply, usage: tuple[int, int], log: RequestLog) -> None:
        numbers = {"promptTokenCount": usage[0], "candidatesTokenCount": usage[1], "totalTokenCount": sum(usage)}
        model = self.path.split("/models/", 1)[-1].split(":", 1)[0] or MODEL
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if reply.scenario is None and config.get("responseMimeType") == "application/json":
            # An auxiliary structured request (model routing, next-speaker check): a value of its schema.
            reply = Reply(None, 0, text=json.dumps(value_of_schema(schema or {})))
        parts: list[dict[str, Any]] = [{"text": reply.text}] if reply.text else []
        if reply.tool is not None:
            parts.append({"functionCall": {"name": reply.tool.name, "args": dict(reply.tool.arguments)}})

        def candidate(content_parts: list[dict[str, Any]], final: bool) -> dict[str, Any]:
            out: dict[str, Any] = {"content": {"role": "model", "parts": content_parts}, "index": 0}
            if final:
                out["finishReason"] = "STOP"
            return out

        if not log.stream:
            self._json(200, {"candidates": [candidate(parts, True)], "usageMetadata": numbers, "modelVersion": model})
            return
        self._start_stream()
        out = _Stream(self, log)
        for piece in _pieces(reply, self.server.stopping):
            if not out.send({"candidates": [candidate([{"text": piece}], False)], "modelVersion": model}):
                return
        tail = [part for part in parts if "functionCall" in part]
        out.send({"candidates": [candidate(tail, True)], "usageMetadata": numbers, "modelVersion": model})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)
        self.log: list[RequestLog] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._ids = 0

    def record(self, entry: RequestLog) -> None:
        with self._lock:
            self.log.append(entry)

    def new_id(self, prefix: str) -> str:
        with self._lock:
            self._ids += 1
            return f"{prefix}_scripted{self._ids:04d}"


class ModelServer:
    """The scripted endpoints on ``127.0.0.1:port`` (0: any free port), served from a thread."""

    def __init__(self, port: int = 0) -> None:
        self._server = _Server(("127.0.0.1", port))
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The root, ``http://127.0.0.1:PORT`` (the APIs are under ``/v1``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[RequestLog]:
        """Every request answered so far, oldest first (a copy)."""
        with self._server._lock:
            return list(self._server.log)

    def start(self) -> ModelServer:
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
