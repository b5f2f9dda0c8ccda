"""The third-party ACP v1 agents, driven with raw JSON lines (raw_v1_client.py), behave as V1_AGENTS.md says.

Two agents: the official TypeScript SDK 0.17.0's example agent, and py_v1_agent.py on the official Python SDK.
Every scenario of v1_scenarios.py runs once per test session (side by side: the TS agent sleeps a second between
steps); each test checks facts of one run, and the last test that every recording under recordings/ still matches.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from .raw_v1_client import CANNED_FILE, CANNED_OUTPUT, Msg, load_recording
from .v1_scenarios import CWD, RECORDINGS, REFUSED, SCENARIOS, Run, normalize, run_all

TS_INITIALIZE = {"protocolVersion": 1, "agentCapabilities": {"loadSession": False}}
PY_MODES = {
    "currentModeId": "ask",
    "availableModes": [
        {"id": "ask", "name": "Ask", "description": "Answers without changing anything"},
        {"id": "code", "name": "Code", "description": "May read, write and run"},
    ],
}
PERMISSION_OPTIONS_TS = [
    {"kind": "allow_once", "name": "Allow this change", "optionId": "allow"},
    {"kind": "reject_once", "name": "Skip this change", "optionId": "reject"},
]
PERMISSION_OPTIONS_PY = [
    {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]


@pytest.fixture(scope="session")
def v1_runs(node: str) -> dict[str, Run]:
    return run_all(SCENARIOS, node)


@pytest.fixture
def runs(v1_runs: dict[str, Run]) -> dict[str, Run]:
    for run in v1_runs.values():
        if run.error is not None:
            pytest.fail(f"{run.name}: {run.error!r}; agent stderr: {run.client.stderr_lines[-10:]}", pytrace=False)
    return v1_runs


def steps(run: Run) -> list[tuple[Any, ...]]:
    """The prompt turn as (sessionUpdate, toolCallId or text, status) for updates and (method,) for requests."""
    out: list[tuple[Any, ...]] = []
    for row in run.wire:
        msg = row["msg"]
        if row["from"] != "agent" or "method" not in msg:
            continue
        if msg["method"] != "session/update":
            out.append((msg["method"],))
            continue
        update = msg["params"]["update"]
        kind = update["sessionUpdate"]
        if kind in ("tool_call", "tool_call_update"):
            out.append((kind, update["toolCallId"], update.get("status")))
        elif kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
            out.append((kind, update["content"]["text"]))
        else:
            out.append((kind,))
    return out


def only(run: Run, method: str) -> Msg:
    found = run.requests(method)
    assert len(found) == 1, found
    return found[0]


# -- the TypeScript SDK 0.17.0 example agent -----------------------------------------------------------------------


def test_ts_initialize_answers_version_1_to_both_offers(runs: dict[str, Run]) -> None:
    assert runs["ts-initialize"].answers["initialize"] == TS_INITIALIZE
    assert runs["ts-initialize-v2-offer"].answers["initialize"] == TS_INITIALIZE


def test_ts_session_new_and_the_optional_methods(runs: dict[str, Run]) -> None:
    answers = runs["ts-initialize"].answers
    assert list(answers["session/new"]) == ["sessionId"]
    assert re.fullmatch(r"[0-9a-f]{32}", answers["session/new"]["sessionId"])
    assert answers["session/set_mode"] == {} and answers["session/set_mode bad"] == {}
    assert answers["authenticate"] == {}
    for method in ("session/load", "session/list"):
        assert answers[method]["error"] == {
            "code": -32601,
            "message": f'"Method not found": {method}',
            "data": {"method": method},
        }


TS_HEAD = [
    (
        "agent_message_chunk",
        "I'll help you with that. Let me start by reading some files to understand the current situation.",
    ),
    ("tool_call", "call_1", "pending"),
    ("tool_call_update", "call_1", "completed"),
    ("agent_message_chunk", " Now I understand the project structure. I need to make some changes to improve it."),
    ("tool_call", "call_2", "pending"),
    ("session/request_permission",),
]


@pytest.mark.parametrize(
    ("name", "tail", "stop"),
    [
        (
            "ts-prompt-allow",
            [
                ("tool_call_update", "call_2", "completed"),
                (
                    "agent_message_chunk",
                    " Perfect! I've successfully updated the configuration. The changes have been applied.",
                ),
            ],
            "end_turn",
        ),
        (
            "ts-prompt-reject",
            [
                (
                    "agent_message_chunk",
                    " I understand you prefer not to make that change. I'll skip the configuration update.",
                )
            ],
            "end_turn",
        ),
        ("ts-prompt-permission-cancelled", [], "end_turn"),
        ("ts-cancel-at-permission", [], "end_turn"),
        ("ts-cancel-then-allow", [("tool_call_update", "call_2", "completed")], "cancelled"),
    ],
)
def test_ts_permission_turns(runs: dict[str, Run], name: str, tail: list[tuple[Any, ...]], stop: str) -> None:
    run = runs[name]
    assert steps(run) == TS_HEAD + tail
    assert run.answers["session/prompt"] == {"stopReason": stop}
    asked = only(run, "session/request_permission")
    assert asked["id"] == 0
    assert asked["params"]["sessionId"] == run.session_id
    assert asked["params"]["toolCall"]["toolCallId"] == "call_2"
    assert asked["params"]["toolCall"]["locations"] == [{"path": "/home/user/project/config.json"}]
    assert asked["params"]["options"] == PERMISSION_OPTIONS_TS


def test_ts_cancel_during_the_turn_stops_before_the_next_update(runs: dict[str, Run]) -> None:
    run = runs["ts-cancel-during-turn"]
    assert steps(run) == TS_HEAD[:1]
    assert run.answers["session/prompt"] == {"stopReason": "cancelled"}
    assert run.requests() == []


# -- the agent on the official Python SDK --------------------------------------------------------------------------


def test_py_initialize_answers_version_1_to_both_offers(runs: dict[str, Run]) -> None:
    expected = {
        "protocolVersion": 1,
        "agentCapabilities": {"loadSession": True, "promptCapabilities": {"image": True, "embeddedContext": True}},
        "authMethods": [],
        "agentInfo": {"name": "py-v1-agent", "title": "Python SDK v1 test agent", "version": "0.1.0"},
    }
    assert runs["py-initialize"].answers["initialize"] == expected
    assert runs["py-initialize-v2-offer"].answers["initialize"] == expected


def test_py_session_new_set_mode_and_the_optional_methods(runs: dict[str, Run]) -> None:
    answers = runs["py-initialize"].answers
    assert answers["session/new"] == {"sessionId": "py-sess-1", "modes": PY_MODES}
    assert answers["session/set_mode"] == {}
    assert answers["session/set_mode bad"]["error"]["code"] == -32602
    assert answers["authenticate"]["error"]["code"] == -32601
    assert answers["session/list"]["error"]["code"] == -32601
    assert answers["session/load"] == {"modes": {**PY_MODES, "currentModeId": "code"}}


def test_py_set_mode_sends_current_mode_update_before_its_answer(runs: dict[str, Run]) -> None:
    wire = [row["msg"] for row in runs["py-set-mode"].wire]
    request = next(i for i, m in enumerate(wire) if m.get("method") == "session/set_mode")
    assert wire[request + 1] == {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "py-sess-1",
            "update": {"currentModeId": "code", "sessionUpdate": "current_mode_update"},
        },
    }
    assert wire[request + 2] == {"jsonrpc": "2.0", "id": wire[request]["id"], "result": {}}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "py-echo",
            [
                ("agent_message_chunk", "You "),
                ("agent_message_chunk", "said: "),
                ("agent_message_chunk", "hello there"),
            ],
        ),
        ("py-plan", [("plan",), ("agent_message_chunk", "Planned 2 steps.")]),
        ("py-think", [("agent_thought_chunk", "Hmm."), ("agent_message_chunk", "I thought about it.")]),
        ("py-slow", [("agent_message_chunk", f"chunk {i}/3\n") for i in (1, 2, 3)]),
    ],
)
def test_py_simple_turns(runs: dict[str, Run], name: str, expected: list[tuple[Any, ...]]) -> None:
    run = runs[name]
    assert steps(run) == expected
    assert run.answers["session/prompt"] == {"stopReason": "end_turn"}


def test_py_plan_entries(runs: dict[str, Run]) -> None:
    assert runs["py-plan"].updates()[0] == {
        "entries": [
            {"content": "Read the code", "priority": "high", "status": "in_progress"},
            {"content": "Write the fix", "priority": "medium", "status": "pending"},
        ],
        "sessionUpdate": "plan",
    }


def test_py_read(runs: dict[str, Run]) -> None:
    run = runs["py-read"]
    path = f"{CWD}/notes.txt"
    assert only(run, "fs/read_text_file")["params"] == {"sessionId": "py-sess-1", "path": path}
    assert steps(run) == [
        ("tool_call", "call-1", "pending"),
        ("fs/read_text_file",),
        ("tool_call_update", "call-1", "completed"),
        ("agent_message_chunk", CANNED_FILE),
    ]
    start, done = run.updates()[:2]
    assert start["kind"] == "read" and start["locations"] == [{"path": path}] and start["rawInput"] == {"path": path}
    assert done["content"] == [{"content": {"text": CANNED_FILE, "type": "text"}, "type": "content"}]
    assert run.answers["session/prompt"] == {"stopReason": "end_turn"}


def test_py_read_refused_is_reported_and_the_turn_ends(runs: dict[str, Run]) -> None:
    run = runs["py-read-refused"]
    assert steps(run) == [
        ("tool_call", "call-1", "pending"),
        ("fs/read_text_file",),
        ("tool_call_update", "call-1", "failed"),
        ("agent_message_chunk", f"error: {REFUSED}"),
    ]
    assert run.answers["session/prompt"] == {"stopReason": "end_turn"}


def test_py_write_reads_then_writes_and_reports_a_diff(runs: dict[str, Run]) -> None:
    run = runs["py-write"]
    path = f"{CWD}/out.txt"
    assert only(run, "fs/read_text_file")["params"] == {"sessionId": "py-sess-1", "path": path}
    assert only(run, "fs/write_text_file")["params"] == {"sessionId": "py-sess-1", "path": path, "content": "new text"}
    assert steps(run) == [
        ("tool_call", "call-1", "pending"),
        ("fs/read_text_file",),
        ("fs/write_text_file",),
        ("tool_call_update", "call-1", "completed"),
        ("agent_message_chunk", f"wrote {path}"),
    ]
    start, done = run.updates()[:2]
    assert start["kind"] == "edit" and start["rawInput"] == {"path": path, "content": "new text"}
    assert done["content"] == [{"path": path, "oldText": CANNED_FILE, "newText": "new text", "type": "diff"}]


def test_py_run_uses_a_terminal(runs: dict[str, Run]) -> None:
    run = runs["py-run"]
    assert only(run, "terminal/create")["params"] == {
        "sessionId": "py-sess-1",
        "command": "echo",
        "args": ["hello"],
        "cwd": CWD,
    }
    for method in ("terminal/wait_for_exit", "terminal/output", "terminal/release"):
        assert only(run, method)["params"] == {"sessionId": "py-sess-1", "terminalId": "term-1"}
    assert steps(run) == [
        ("tool_call", "call-1", "pending"),
        ("terminal/create",),
        ("tool_call_update", "call-1", "in_progress"),
        ("terminal/wait_for_exit",),
        ("terminal/output",),
        ("terminal/release",),
        ("tool_call_update", "call-1", "completed"),
        ("agent_message_chunk", f"{CANNED_OUTPUT}exit code: 0"),
    ]
    start, embedded, done = run.updates()[:3]
    assert start["kind"] == "execute" and start["rawInput"] == {"command": "echo", "args": ["hello"]}
    assert embedded["content"] == [{"terminalId": "term-1", "type": "terminal"}]
    assert done["rawOutput"] == {"exitCode": 0, "signal": None, "truncated": False}


@pytest.mark.parametrize(
    ("name", "tail", "stop"),
    [
        (
            "py-permission-allow",
            [("tool_call_update", "call-1", "completed"), ("agent_message_chunk", "allowed")],
            "end_turn",
        ),
        (
            "py-permission-reject",
            [("tool_call_update", "call-1", "failed"), ("agent_message_chunk", "rejected")],
            "end_turn",
        ),
        ("py-permission-cancelled", [], "cancelled"),
        ("py-cancel-at-permission", [], "cancelled"),
    ],
)
def test_py_permission(runs: dict[str, Run], name: str, tail: list[tuple[Any, ...]], stop: str) -> None:
    run = runs[name]
    assert steps(run) == [("tool_call", "call-1", "pending"), ("session/request_permission",), *tail]
    asked = only(run, "session/request_permission")
    assert asked["params"] == {
        "sessionId": "py-sess-1",
        "toolCall": {"toolCallId": "call-1", "kind": "edit", "status": "pending", "title": "Touch the protected file"},
        "options": PERMISSION_OPTIONS_PY,
    }
    assert run.answers["session/prompt"] == {"stopReason": stop}


def test_py_slow_honours_cancel(runs: dict[str, Run]) -> None:
    run = runs["py-slow-cancel"]
    chunks = [update["content"]["text"] for update in run.updates()]
    assert 1 <= len(chunks) < 50
    assert chunks == [f"chunk {i}/50\n" for i in range(1, len(chunks) + 1)]
    assert run.answers["session/prompt"] == {"stopReason": "cancelled"}


def test_py_load_replays_the_stored_history_before_answering(runs: dict[str, Run]) -> None:
    run = runs["py-load"]
    wire = [row["msg"] for row in run.wire]
    load = next(i for i, m in enumerate(wire) if m.get("method") == "session/load")
    answer = next(i for i, m in enumerate(wire) if m.get("id") == wire[load]["id"] and "method" not in m)
    replayed = wire[load + 1 : answer]
    assert all(m["method"] == "session/update" and m["params"]["sessionId"] == "py-sess-1" for m in replayed)
    assert [m["params"]["update"]["sessionUpdate"] for m in replayed] == [
        "user_message_chunk",
        "agent_message_chunk",
        "agent_message_chunk",
        "agent_message_chunk",
        "user_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ]
    assert run.answers["session/load"] == {"modes": {**PY_MODES, "currentModeId": "code"}}
    assert run.answers["session/prompt"] == {"stopReason": "end_turn"}
    assert run.answers["session/load unknown"]["error"] == {
        "code": -32002,
        "message": "Resource not found",
        "data": {"uri": "py-sess-99"},
    }


# -- the recordings ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_recording_matches_a_new_run(runs: dict[str, Run], scenario: Any) -> None:
    """recordings/<name>.jsonl is what the agent says today (session ids and, where timing decides, chunks aside)."""
    path = RECORDINGS / f"{scenario.name}.jsonl"
    assert path.is_file(), f"missing {path}: run python -m tests.interop.record_v1_agents"
    recorded = normalize(load_recording(path), scenario.exact)
    assert normalize(runs[scenario.name].wire, scenario.exact) == recorded
