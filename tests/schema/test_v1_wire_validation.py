"""v1 messages as real agents and clients send them decode into the typed structs, re-encode unchanged, and
the official v1 JSON schema accepts both the sample and the re-encoding; every generated v1 struct encodes
to JSON the schema accepts."""

from __future__ import annotations

from typing import Any

import jsonschema
import msgspec
import pytest

from acp_session import codec
from acp_session._schema_runtime import UnknownVariant
from acp_session.schema.v1 import types as t

TEXT = {"type": "text", "text": "Looking at the failing test."}


def update(body: dict[str, Any]) -> dict[str, Any]:
    return {"sessionId": "sess_1", "update": body}


SESSION_UPDATES: dict[str, list[dict[str, Any]]] = {
    "user_message_chunk": [
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Fix the build"}},
        {
            "sessionUpdate": "user_message_chunk",
            "content": {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo=", "uri": "file:///s.png"},
        },
        {
            "sessionUpdate": "user_message_chunk",
            "content": {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="},
        },
        {
            "sessionUpdate": "user_message_chunk",
            "content": {
                "type": "resource_link",
                "name": "main.py",
                "uri": "file:///w/main.py",
                "mimeType": "text/x-python",
            },
        },
        {
            "sessionUpdate": "user_message_chunk",
            "content": {
                "type": "resource",
                "resource": {"uri": "file:///w/main.py", "mimeType": "text/x-python", "text": "print(1)\n"},
            },
        },
        {
            "sessionUpdate": "user_message_chunk",
            "content": {"type": "resource", "resource": {"uri": "file:///w/logo.bin", "blob": "AAE="}},
        },
    ],
    "agent_message_chunk": [
        {"sessionUpdate": "agent_message_chunk", "content": TEXT},
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "msg_7",
            "content": {"type": "text", "text": "Done.", "annotations": {"audience": ["user"], "priority": 0.5}},
        },
    ],
    "agent_thought_chunk": [{"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "Hmm"}}],
    "tool_call": [
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "toolu_01",
            "title": "Read src/app.py",
            "kind": "read",
            "status": "pending",
            "locations": [{"path": "/w/src/app.py", "line": 12}],
            "rawInput": {"file_path": "/w/src/app.py"},
            "_meta": {"claudeCode": {"toolName": "Read"}},
        },
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "toolu_02",
            "title": "`npm test`",
            "kind": "execute",
            "status": "in_progress",
            "content": [{"type": "terminal", "terminalId": "term_1"}],
        },
    ],
    "tool_call_update": [
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "toolu_01",
            "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "```py\nprint(1)\n```"}}],
            "rawOutput": {"lines": 1},
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "toolu_03",
            "title": "Edit src/app.py",
            "kind": "edit",
            "status": "failed",
            "content": [{"type": "diff", "path": "/w/src/app.py", "oldText": "a = 1\n", "newText": "a = 2\n"}],
            "locations": [{"path": "/w/src/app.py"}],
        },
    ],
    "plan": [
        {
            "sessionUpdate": "plan",
            "entries": [
                {"content": "Reproduce the failure", "priority": "high", "status": "completed"},
                {"content": "Fix the parser", "priority": "medium", "status": "in_progress"},
                {"content": "Add a test", "priority": "low", "status": "pending"},
            ],
        }
    ],
    "available_commands_update": [
        {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [
                {"name": "review", "description": "Review the diff"},
                {"name": "web", "description": "Search the web", "input": {"hint": "query"}},
            ],
        }
    ],
    "current_mode_update": [{"sessionUpdate": "current_mode_update", "currentModeId": "plan"}],
    "config_option_update": [
        {
            "sessionUpdate": "config_option_update",
            "configOptions": [
                {"type": "boolean", "id": "fast", "name": "Fast mode", "currentValue": False},
                {
                    "type": "select",
                    "id": "model",
                    "name": "Model",
                    "category": "model",
                    "currentValue": "opus",
                    "options": [
                        {"group": "anthropic", "name": "Anthropic", "options": [{"value": "opus", "name": "Opus"}]}
                    ],
                },
            ],
        }
    ],
    "session_info_update": [
        {"sessionUpdate": "session_info_update", "title": "Fix the build", "updatedAt": "2026-11-30T12:00:00Z"},
        {"sessionUpdate": "session_info_update", "title": None},
    ],
    "usage_update": [
        {"sessionUpdate": "usage_update", "used": 53000, "size": 200000, "cost": {"amount": 0.42, "currency": "USD"}}
    ],
    "notice": [
        {"sessionUpdate": "notice", "severity": "warning", "title": "Rate limited", "description": "Retrying in 5 s"}
    ],
    "compaction_update": [
        {"sessionUpdate": "compaction_update", "compactionId": "cmp_1", "status": "in_progress"},
        {"sessionUpdate": "compaction_update", "compactionId": "cmp_1", "status": "completed", "summary": [TEXT]},
    ],
    "compaction_summary_chunk": [
        {
            "sessionUpdate": "compaction_summary_chunk",
            "compactionId": "cmp_1",
            "content": {"type": "text", "text": "So far"},
        }
    ],
}

INITIALIZE_RESPONSE = {
    "protocolVersion": 1,
    "agentCapabilities": {
        "loadSession": True,
        "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
        "mcpCapabilities": {"http": True, "sse": False},
        "sessionCapabilities": {"list": {}, "resume": {}},
        "auth": {"logout": {}},
    },
    "authMethods": [
        {"id": "claude-login", "name": "Log in with Claude", "description": "Run `claude /login`"},
        {"type": "terminal", "id": "tui", "name": "Log in in a terminal", "args": ["--login"], "env": {"MODE": "tui"}},
    ],
    "agentInfo": {"name": "claude-code-acp", "title": "Claude Code", "version": "0.10.2"},
}

NEW_SESSION_RESPONSE = {
    "sessionId": "sess_1",
    "modes": {
        "currentModeId": "default",
        "availableModes": [
            {"id": "default", "name": "Always Ask", "description": "Prompts for permission on first use"},
            {"id": "acceptEdits", "name": "Accept Edits"},
            {"id": "plan", "name": "Plan Mode", "description": None},
        ],
    },
    "configOptions": [
        {
            "type": "select",
            "id": "model",
            "name": "Model",
            "category": "model",
            "currentValue": "sonnet",
            "options": [
                {"value": "sonnet", "name": "Sonnet", "description": "Fast"},
                {"value": "opus", "name": "Opus"},
            ],
        }
    ],
}

# (schema definition, Python type, sample)
SAMPLES: list[tuple[str, Any, dict[str, Any]]] = [
    (
        "InitializeRequest",
        t.InitializeRequest,
        {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True},
            "clientInfo": {"name": "acp-session", "version": "0.1.0"},
        },
    ),
    ("InitializeResponse", t.InitializeResponse, INITIALIZE_RESPONSE),
    ("AuthenticateRequest", t.AuthenticateRequest, {"methodId": "claude-login"}),
    (
        "NewSessionRequest",
        t.NewSessionRequest,
        {
            "cwd": "/w",
            "mcpServers": [
                {
                    "name": "fs",
                    "command": "/usr/bin/mcp-fs",
                    "args": ["--root", "/w"],
                    "env": [{"name": "A", "value": "1"}],
                },
                {"type": "http", "name": "docs", "url": "https://mcp.example.invalid", "headers": []},
            ],
        },
    ),
    ("NewSessionResponse", t.NewSessionResponse, NEW_SESSION_RESPONSE),
    ("SetSessionModeRequest", t.SetSessionModeRequest, {"sessionId": "sess_1", "modeId": "plan"}),
    ("PromptRequest", t.PromptRequest, {"sessionId": "sess_1", "prompt": [TEXT]}),
    ("PromptResponse", t.PromptResponse, {"stopReason": "end_turn"}),
    ("CancelNotification", t.CancelNotification, {"sessionId": "sess_1"}),
    *[("SessionNotification", t.SessionNotification, update(b)) for bodies in SESSION_UPDATES.values() for b in bodies],
    (
        "RequestPermissionRequest",
        t.RequestPermissionRequest,
        {
            "sessionId": "sess_1",
            "toolCall": {"toolCallId": "toolu_03", "title": "Edit src/app.py", "kind": "edit", "status": "pending"},
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "always", "name": "Always Allow", "kind": "allow_always"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                {"optionId": "never", "name": "Never", "kind": "reject_always"},
            ],
        },
    ),
    (
        "RequestPermissionResponse",
        t.RequestPermissionResponse,
        {"outcome": {"outcome": "selected", "optionId": "allow"}},
    ),
    ("RequestPermissionResponse", t.RequestPermissionResponse, {"outcome": {"outcome": "cancelled"}}),
    ("ReadTextFileRequest", t.ReadTextFileRequest, {"sessionId": "sess_1", "path": "/w/a.py", "line": 10, "limit": 50}),
    ("ReadTextFileResponse", t.ReadTextFileResponse, {"content": "import os\n"}),
    ("WriteTextFileRequest", t.WriteTextFileRequest, {"sessionId": "sess_1", "path": "/w/a.py", "content": "x = 1\n"}),
    ("WriteTextFileResponse", t.WriteTextFileResponse, {}),
    (
        "CreateTerminalRequest",
        t.CreateTerminalRequest,
        {
            "sessionId": "sess_1",
            "command": "npm",
            "args": ["test"],
            "env": [{"name": "CI", "value": "1"}],
            "cwd": "/w",
            "outputByteLimit": 1048576,
        },
    ),
    ("CreateTerminalResponse", t.CreateTerminalResponse, {"terminalId": "term_1"}),
    ("TerminalOutputRequest", t.TerminalOutputRequest, {"sessionId": "sess_1", "terminalId": "term_1"}),
    ("TerminalOutputResponse", t.TerminalOutputResponse, {"output": "1 passing\n", "truncated": False}),
    (
        "TerminalOutputResponse",
        t.TerminalOutputResponse,
        {"output": "", "truncated": True, "exitStatus": {"exitCode": 0, "signal": None}},
    ),
    ("WaitForTerminalExitRequest", t.WaitForTerminalExitRequest, {"sessionId": "sess_1", "terminalId": "term_1"}),
    ("WaitForTerminalExitResponse", t.WaitForTerminalExitResponse, {"exitCode": None, "signal": "SIGTERM"}),
    ("KillTerminalRequest", t.KillTerminalRequest, {"sessionId": "sess_1", "terminalId": "term_1"}),
    ("KillTerminalResponse", t.KillTerminalResponse, {}),
    ("ReleaseTerminalRequest", t.ReleaseTerminalRequest, {"sessionId": "sess_1", "terminalId": "term_1"}),
    ("ReleaseTerminalResponse", t.ReleaseTerminalResponse, {}),
]


def validator_for(schema: dict[str, Any], name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": schema["$defs"]})


def unknown_parts(value: Any) -> list[Any]:
    """Every UnknownVariant inside a decoded value (none for a sample of known variants)."""
    if isinstance(value, UnknownVariant):
        return [value]
    if isinstance(value, msgspec.Struct):
        return [x for f in value.__struct_fields__ for x in unknown_parts(getattr(value, f))]
    if isinstance(value, list):
        return [x for item in value for x in unknown_parts(item)]
    if isinstance(value, dict):
        return [x for item in value.values() for x in unknown_parts(item)]
    return []


def test_samples_cover_every_session_update_and_the_client_methods(v1_stable_schema: dict[str, Any]) -> None:
    union = v1_stable_schema["$defs"]["SessionUpdate"]
    tags = {alt["properties"]["sessionUpdate"]["const"] for alt in union.get("oneOf") or union["anyOf"]}
    assert tags == set(SESSION_UPDATES)
    covered = {name for name, _, _ in SAMPLES}
    for spec in t.CLIENT_METHODS.values():
        if not spec.method.startswith("elicitation/"):
            assert {spec.params.__name__, spec.result.__name__} <= covered, spec.method


@pytest.mark.parametrize(("name", "tp", "sample"), SAMPLES, ids=[f"{i}-{s[0]}" for i, s in enumerate(SAMPLES)])
def test_sample_round_trips_and_validates(
    name: str, tp: Any, sample: dict[str, Any], v1_stable_schema: dict[str, Any]
) -> None:
    validator = validator_for(v1_stable_schema, name)
    assert [e.message for e in validator.iter_errors(sample)] == [], "the sample itself must be valid v1"
    wire = msgspec.json.encode(sample)
    decoded = codec.decoder(tp)(wire)
    assert type(decoded) is tp
    assert unknown_parts(decoded) == [], "a valid v1 message decodes into known variants only"
    again = codec.to_builtins(decoded)
    assert again == sample
    assert [e.message for e in validator.iter_errors(again)] == []
    assert codec.decode(codec.encode(decoded), tp) == decoded


def test_initialize_and_new_session_decode_to_the_expected_types() -> None:
    init = codec.decode(msgspec.json.encode(INITIALIZE_RESPONSE), t.InitializeResponse)
    assert isinstance(init.agent_info, t.Implementation) and init.agent_info.title == "Claude Code"
    assert isinstance(init.auth_methods, list)
    assert [type(m) for m in init.auth_methods] == [t.AuthMethodAgent, t.AuthMethodTerminal]
    assert isinstance(init.agent_capabilities, t.AgentCapabilities) and init.agent_capabilities.load_session is True
    new = codec.decode(msgspec.json.encode(NEW_SESSION_RESPONSE), t.NewSessionResponse)
    assert isinstance(new.modes, t.SessionModeState) and new.modes.current_mode_id == "default"
    assert [m.id for m in new.modes.available_modes] == ["default", "acceptEdits", "plan"]
    assert new.modes.available_modes[2].description is None
    assert isinstance(new.config_options, list) and isinstance(new.config_options[0], t.SessionConfigSelect)


def test_every_session_update_sample_decodes_to_its_variant() -> None:
    for tag, bodies in SESSION_UPDATES.items():
        for body in bodies:
            decoded = codec.decode(msgspec.json.encode(update(body)), t.SessionNotification)
            assert decoded.update.__struct_config__.tag == tag  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------
# Every generated struct (not only the sampled ones), as tests/schema/test_wire_validation.py does for v2.


def test_v1_method_entries() -> None:
    assert t.CLIENT_NOTIFICATIONS["session/update"].params is t.SessionNotification
    assert t.CLIENT_METHODS["session/request_permission"].result is t.RequestPermissionResponse
