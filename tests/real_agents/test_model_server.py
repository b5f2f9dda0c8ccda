"""The scripted model endpoints of the real-agent harness (dev/real_agents/script.py, dev/real_agents/model_server.py).

Pure Python and fast: a real HTTP server on 127.0.0.1, real requests in each wire dialect, and the streamed
answers decoded back into the reply the script chose.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from dev.real_agents.model_server import ModelServer, anthropic_turn, chat_turn, responses_turn
from dev.real_agents.script import AUX_REPLY, SCENARIOS, Turn, choose_tool, marker, parse_marker, reply_for

EDIT = marker("edit", path="/tmp/x/notes.txt", content="hello_world")


# -- the script -----------------------------------------------------------------------------------------------------


def test_marker_round_trip_and_bad_values() -> None:
    text = "Please follow " + marker("shell", command="echo_hi") + " now"
    assert parse_marker(text) == ("shell", {"command": "echo_hi"})
    assert parse_marker("first " + marker("text") + " then " + EDIT)[0] == "edit"  # the last marker counts
    assert parse_marker("no marker here") is None
    with pytest.raises(ValueError, match="unknown scenario"):
        marker("nope")
    with pytest.raises(ValueError, match="without spaces"):
        marker("edit", path="a b")


def test_the_step_is_the_number_of_tool_calls_since_the_marker() -> None:
    tools = {"Write": ["file_path", "content"], "Bash": ["command", "description"]}
    first = reply_for(Turn([("old " + marker("text"), 3), (EDIT, 0)], tools))
    assert (first.scenario, first.step, first.tool is not None) == ("edit", 0, True)
    # A later user text without a marker (a reminder an agent adds) does not restart the count.
    second = reply_for(Turn([(EDIT, 1), ("<system-reminder>", 0)], tools, ["File created"]))
    assert (second.step, second.tool, second.text) == (1, None, "Edit step finished. Tool said: File created")
    assert reply_for(Turn([(EDIT, 5)], tools)).step == len(SCENARIOS["edit"]) - 1  # past the end: the last step


def test_requests_without_tools_or_marker_get_the_aux_reply() -> None:
    assert reply_for(Turn([(EDIT, 0)], {})).text == AUX_REPLY  # a title or summary request
    assert reply_for(Turn([("hello", 0)], {"Bash": ["command"]})).text == AUX_REPLY


@pytest.mark.parametrize(
    ("tools", "name", "arguments", "freeform"),
    [
        ({"Write": ["file_path", "content"]}, "Write", {"file_path": "/tmp/x/notes.txt"}, False),
        ({"mcp__acp__Write": ["file_path", "content"]}, "mcp__acp__Write", {"file_path": "/tmp/x/notes.txt"}, False),
        ({"write_file": ["file_path", "content"]}, "write_file", {"file_path": "/tmp/x/notes.txt"}, False),
        ({"write": ["filePath", "content"]}, "write", {"filePath": "/tmp/x/notes.txt"}, False),
        (
            {"create": ["path", "file_text"]},
            "create",
            {"path": "/tmp/x/notes.txt", "file_text": "hello world\n"},
            False,
        ),
        ({"apply_patch": []}, "apply_patch", {}, True),
        ({"apply_patch": ["input"]}, "apply_patch", {}, False),
    ],
)
def test_write_maps_onto_the_offered_tool(
    tools: dict[str, list[str]], name: str, arguments: dict[str, str], freeform: bool
) -> None:
    choice = choose_tool("write", {"path": "/tmp/x/notes.txt", "content": "hello_world"}, tools)
    assert choice is not None and choice.name == name and choice.freeform is freeform
    for key, value in arguments.items():
        assert choice.arguments[key] == value
    if name == "apply_patch":
        patch = str(choice.arguments["input"])
        assert patch.startswith("*** Begin Patch\n*** Add File: /tmp/x/notes.txt\n+hello world\n")
        assert patch.endswith("*** End Patch\n")
    elif name != "create":
        assert choice.arguments["content"] == "hello world\n"


@pytest.mark.parametrize(
    ("tools", "arguments"),
    [
        ({"Bash": ["command"]}, {"command": "echo hi", "description": "Run the scripted command"}),
        ({"exec_command": ["cmd"]}, {"cmd": "echo hi"}),
        ({"shell_command": ["command"]}, {"command": "echo hi"}),
        ({"shell": ["command"]}, {"command": ["bash", "-lc", "echo hi"]}),
    ],
)
def test_shell_maps_onto_the_offered_tool(tools: dict[str, list[str]], arguments: dict[str, Any]) -> None:
    choice = choose_tool("shell", {"command": "echo_hi"}, tools)
    assert choice is not None and dict(choice.arguments) == arguments
    assert choose_tool("shell", {}, {"Read": ["file_path"]}) is None


def test_dialects_reduce_to_the_same_turn() -> None:
    anthropic = {
        "tools": [{"name": "Write", "input_schema": {"properties": {"file_path": {}, "content": {}}}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": EDIT}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Write", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "rejected"}]},
        ],
    }
    chat = {
        "tools": [{"type": "function", "function": {"name": "Write", "parameters": {"properties": {"file_path": {}}}}}],
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": EDIT},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "rejected"},
        ],
    }
    responses = {
        "tools": [{"type": "custom", "name": "Write"}],
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": EDIT}]},
            {"type": "custom_tool_call", "call_id": "c1", "name": "Write", "input": "..."},
            {"type": "custom_tool_call_output", "call_id": "c1", "output": "rejected"},
        ],
    }
    for turn in (anthropic_turn(anthropic), chat_turn(chat), responses_turn(responses)):
        assert list(turn.users) == [(EDIT, 1)] and "Write" in turn.tools and list(turn.tool_results) == ["rejected"]
        assert reply_for(turn).step == 1


# -- the server -----------------------------------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as running:
        yield running


def post(server: ModelServer, path: str, body: dict[str, Any]) -> tuple[int, str, str]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read().decode()
    finally:
        connection.close()


def events(text: str) -> list[tuple[str | None, Any]]:
    """Server-sent events as (event name, decoded data)."""
    out: list[tuple[str | None, Any]] = []
    for block in text.strip().split("\n\n"):
        name = None
        data = ""
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        out.append((name, data if data == "[DONE]" else json.loads(data)))
    return out


BASH = {"type": "function", "function": {"name": "Bash", "parameters": {"properties": {"command": {}}}}}


def test_chat_completions_stream_text_then_a_tool_call(server: ModelServer) -> None:
    body = {"model": "m", "stream": True, "stream_options": {"include_usage": True}, "tools": [BASH]}
    status, kind, text = post(
        server, "/v1/chat/completions", {**body, "messages": [{"role": "user", "content": marker("text")}]}
    )
    assert status == 200 and kind == "text/event-stream"
    got = events(text)
    assert got[-1] == (None, "[DONE]")
    chunks = [data for _, data in got[:-1]]
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"]) == "pong"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"]["completion_tokens"] >= 1

    shell = marker("shell", command="echo_hi")
    _, _, text = post(server, "/v1/chat/completions", {**body, "messages": [{"role": "user", "content": shell}]})
    deltas = [c["choices"][0] for _, c in events(text)[:-1] if c["choices"]]
    call = next(d["delta"]["tool_calls"][0] for d in deltas if "tool_calls" in d["delta"])
    assert call["function"]["name"] == "Bash" and json.loads(call["function"]["arguments"])["command"] == "echo hi"
    assert deltas[-1]["finish_reason"] == "tool_calls"
    assert [(r.api, r.scenario, r.step, r.tool) for r in server.requests] == [
        ("chat", "text", 0, None),
        ("chat", "shell", 0, "Bash"),
    ]


def test_chat_completions_without_stream(server: ModelServer) -> None:
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": marker("text")}]
    status, _, text = post(server, "/v1/chat/completions", {"model": "m", "tools": [BASH], "messages": messages})
    answer = json.loads(text)
    assert status == 200 and answer["choices"][0]["message"]["content"] == "pong"
    assert answer["usage"]["total_tokens"] == answer["usage"]["prompt_tokens"] + answer["usage"]["completion_tokens"]
    assert server.requests[-1].system == "be brief"


def test_responses_api_streams_a_freeform_patch_and_usage(server: ModelServer) -> None:
    body = {
        "model": "gpt",
        "instructions": "You are codex.",
        "stream": True,
        "tools": [{"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}}],
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": EDIT}]}],
    }
    status, kind, text = post(server, "/v1/responses", body)
    got = events(text)
    assert status == 200 and kind == "text/event-stream"
    assert [name for name, _ in got] == [
        "response.created",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
    ]
    assert all(name == data["type"] for name, data in got)
    item = got[2][1]["item"]
    assert item["type"] == "custom_tool_call" and item["name"] == "apply_patch"
    assert "*** Add File: /tmp/x/notes.txt" in item["input"]
    usage = got[-1][1]["response"]["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert server.requests[-1].system == "You are codex."

    body["input"] += [
        {"type": "custom_tool_call", "call_id": item["call_id"], "name": "apply_patch", "input": item["input"]},
        {"type": "custom_tool_call_output", "call_id": item["call_id"], "output": "Success"},
    ]
    _, _, text = post(server, "/v1/responses", body)
    deltas = [data["delta"] for name, data in events(text) if name == "response.output_text.delta"]
    assert "".join(deltas) == "Edit step finished. Tool said: Success"


def test_anthropic_messages_stream_a_tool_use(server: ModelServer) -> None:
    body = {
        "model": "claude",
        "stream": True,
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "tools": [{"name": "Write", "input_schema": {"properties": {"file_path": {}, "content": {}}}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": EDIT}]}],
    }
    status, _, text = post(server, "/v1/messages", body)
    got = events(text)
    names = [name for name, _ in got]
    assert status == 200 and names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    start = next(data for name, data in got if name == "content_block_start")["content_block"]
    assert start["type"] == "tool_use" and start["name"] == "Write" and start["input"] == {}
    partial = "".join(d["delta"]["partial_json"] for n, d in got if n == "content_block_delta")
    assert json.loads(partial) == {"file_path": "/tmp/x/notes.txt", "content": "hello world\n"}
    assert got[-2][1]["delta"]["stop_reason"] == "tool_use"
    assert server.requests[-1].system == "You are Claude Code."

    status, _, text = post(server, "/v1/messages/count_tokens", {"messages": []})
    assert status == 200 and json.loads(text)["input_tokens"] >= 1


def test_anthropic_without_stream_and_aux_requests(server: ModelServer) -> None:
    body = {"model": "haiku", "messages": [{"role": "user", "content": "Write a title for: " + EDIT}]}
    status, _, text = post(server, "/v1/messages", body)  # no tools: a title request
    answer = json.loads(text)
    assert status == 200 and answer["content"] == [{"type": "text", "text": AUX_REPLY}]
    assert answer["stop_reason"] == "end_turn" and answer["usage"]["output_tokens"] >= 1


def test_a_client_hanging_up_mid_reply_is_logged(server: ModelServer) -> None:
    body = {
        "model": "claude",
        "stream": True,
        "tools": [{"name": "Bash", "input_schema": {}}],
        "messages": [{"role": "user", "content": marker("long")}],
    }
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        data = json.dumps(body).encode()
        head = f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n\r\n"
        sock.sendall(head.encode() + data)
        seen = b""
        while b"content_block_delta" not in seen:  # the reply is streaming: then hang up
            seen += sock.recv(65536)
    deadline = time.monotonic() + 10
    while not server.requests[-1].hung_up and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.requests[-1].hung_up and server.requests[-1].scenario == "long"


def test_models_listing_and_unknown_paths(server: ModelServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", "/v1/models")
    listing = json.loads(connection.getresponse().read())
    connection.close()
    assert listing["data"][0]["id"] == "scripted-model"
    status, _, text = post(server, "/v1/unknown", {})
    assert status == 404 and "no such endpoint" in text
    status, _, text = post(server, "/v1/messages", [1])  # type: ignore[arg-type]
    assert status == 400


def test_gemini_streams_a_function_call_and_answers_structured_requests(server: ModelServer) -> None:
    declaration = {"name": "run_shell_command", "parametersJsonSchema": {"properties": {"command": {}}}}
    body = {
        "systemInstruction": {"parts": [{"text": "You are Gemini CLI."}]},
        "tools": [{"functionDeclarations": [declaration]}],
        "contents": [{"role": "user", "parts": [{"text": marker("shell", command="echo_hi")}]}],
    }
    status, kind, text = post(server, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", body)
    chunks = [data for _, data in events(text)]
    assert status == 200 and kind == "text/event-stream"
    final = chunks[-1]["candidates"][0]
    assert final["finishReason"] == "STOP"
    call = final["content"]["parts"][0]["functionCall"]
    assert (call["name"], call["args"]["command"]) == ("run_shell_command", "echo hi")
    assert chunks[-1]["usageMetadata"]["totalTokenCount"] >= 2
    assert server.requests[-1].system == "You are Gemini CLI."

    body["contents"] += [
        {"role": "model", "parts": [final["content"]["parts"][0]]},
        {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command", "response": {"output": "hi"}}}]},
    ]
    _, _, text = post(server, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", body)
    said = "".join(p.get("text", "") for _, d in events(text) for p in d["candidates"][0]["content"]["parts"])
    assert said == 'Shell step finished. Tool said: {"output": "hi"}'

    schema = {
        "type": "OBJECT",
        "properties": {
            "reasoning": {"type": "STRING"},
            "score": {"type": "INTEGER"},
            "pick": {"enum": ["flash", "pro"]},
        },
        "required": ["reasoning", "score", "pick"],
    }
    router = {
        "contents": [{"role": "user", "parts": [{"text": "classify"}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": schema},
    }
    status, _, text = post(server, "/v1beta/models/flash-lite:generateContent", router)
    reply = json.loads(json.loads(text)["candidates"][0]["content"]["parts"][0]["text"])
    assert status == 200 and reply == {"reasoning": "scripted", "score": 0, "pick": "flash"}
    status, _, text = post(server, "/v1beta/models/flash-lite:countTokens", router)
    assert status == 200 and json.loads(text)["totalTokens"] >= 1
