"""v1: unknown variants and enum values are kept and re-encode unchanged; patch fields keep three states.

The rules v1 shares with v2 (an unknown or extension session update, unknown fields, a wrong required field) run
for both versions in test_forward_compat.py."""

from __future__ import annotations

import re
import types
from pathlib import Path
from typing import Any

import msgspec
import pytest

from acp_session import codec
from acp_session.schema.v1 import types as t
from acp_session.schema.v1 import unstable as u
from tests.schema.builders import build


def notification(update: bytes) -> bytes:
    return b'{"sessionId":"s1","update":' + update + b"}"


def same_json(a: bytes, b: bytes) -> bool:
    return bool(msgspec.json.decode(a) == msgspec.json.decode(b))


def test_unknown_session_update_through_the_unstable_types() -> None:
    wire = notification(b'{"sessionUpdate":"hologram_update"}')
    decoded = codec.decode(wire, u.SessionNotification)
    assert isinstance(decoded.update, t.UnknownSessionUpdate)  # unchanged in unstable: the same class
    assert codec.encode(decoded) == wire


def test_unknown_content_block_keeps_its_chunk_typed() -> None:
    wire = notification(
        b'{"sessionUpdate":"agent_message_chunk","content":{"type":"_acme/sketch","strokes":[[0,1],[2,3]]}}'
    )
    decoded = codec.decode(wire, t.SessionNotification)
    assert isinstance(decoded.update, t.AgentMessageChunk)
    assert isinstance(decoded.update.content, t.UnknownContentBlock)
    assert decoded.update.content.tag == "_acme/sketch"
    assert codec.encode(decoded) == wire


def test_unknown_tool_call_content_keeps_its_known_siblings() -> None:
    wire = notification(
        b'{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Edit","content":['
        b'{"type":"diff","path":"/a","newText":"x"},{"type":"hunk","lines":[1,2]},'
        b'{"type":"content","content":{"type":"text","text":"t"}}]}'
    )
    decoded = codec.decode(wire, t.SessionNotification)
    assert isinstance(decoded.update, t.ToolCall)
    content = decoded.update.content
    assert isinstance(content, list)
    assert [type(c) for c in content] == [t.Diff, t.UnknownToolCallContent, t.Content]
    assert same_json(codec.encode(decoded), wire)


@pytest.mark.parametrize(
    ("update", "value"),
    [
        (b'{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"paused"}', "paused"),
        (b'{"sessionUpdate":"tool_call_update","toolCallId":"c1","kind":"_acme/deploy"}', "_acme/deploy"),
        (b'{"sessionUpdate":"tool_call","toolCallId":"c1","title":"T","kind":"browse","status":"queued"}', "browse"),
        (b'{"sessionUpdate":"plan","entries":[{"content":"a","priority":"urgent","status":"blocked"}]}', "urgent"),
        (
            b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x",'
            b'"annotations":{"audience":["system"]}}}',
            "system",
        ),
        (
            b'{"sessionUpdate":"config_option_update","configOptions":[{"type":"boolean","id":"b","name":"B",'
            b'"currentValue":true,"category":"_acme/speed"}]}',
            "_acme/speed",
        ),
    ],
)
def test_unknown_enum_values_are_kept_and_re_encoded(update: bytes, value: str) -> None:
    wire = notification(update)
    decoded = codec.decode(wire, t.SessionNotification)
    assert not isinstance(decoded.update, t.UnknownSessionUpdate)
    assert value.encode() in codec.encode(decoded)
    assert same_json(codec.encode(decoded), wire)


def test_unknown_stop_reason_and_permission_option_kind() -> None:
    prompt = codec.decode(b'{"stopReason":"_acme/budget"}', t.PromptResponse)
    assert prompt.stop_reason == "_acme/budget" and prompt.stop_reason not in t.STOP_REASON_VALUES
    assert codec.encode(prompt) == b'{"stopReason":"_acme/budget"}'
    wire = (
        b'{"sessionId":"s","toolCall":{"toolCallId":"c"},'
        b'"options":[{"optionId":"o","name":"Allow for a day","kind":"allow_today"}]}'
    )
    request = codec.decode(wire, t.RequestPermissionRequest)
    assert request.options[0].kind == "allow_today"
    assert codec.encode(request) == wire


def test_unknown_permission_outcome() -> None:
    wire = b'{"outcome":{"outcome":"deferred","until":"later"}}'
    response = codec.decode(wire, t.RequestPermissionResponse)
    assert isinstance(response.outcome, t.UnknownRequestPermissionOutcome)
    assert response.outcome.tag == "deferred"
    assert codec.encode(response) == wire
    selected = codec.decode(b'{"outcome":{"outcome":"selected","optionId":"o"}}', t.RequestPermissionResponse)
    assert isinstance(selected.outcome, t.SelectedPermissionOutcome)


def test_auth_methods_default_known_and_unknown() -> None:
    """No `type` means `agent` (v1's default); `terminal` is known; anything else is kept raw, never taken for agent."""
    wire = (
        b'{"protocolVersion":1,"authMethods":['
        b'{"id":"login","name":"Log in","description":null},'
        b'{"type":"agent","id":"again","name":"Agent"},'
        b'{"type":"terminal","id":"tui","name":"TUI","args":["--login"]},'
        b'{"type":"env_var","id":"key","name":"API key","varName":"KEY"}]}'
    )
    response = codec.decode(wire, t.InitializeResponse)
    methods = response.auth_methods
    assert isinstance(methods, list)
    assert [type(m) for m in methods] == [
        t.AuthMethodAgent,
        t.AuthMethodAgent,
        t.AuthMethodTerminal,
        t.UnknownAuthMethod,
    ]
    unknown = methods[3]
    assert isinstance(unknown, t.UnknownAuthMethod) and unknown.tag == "env_var"
    assert codec.encode(unknown) == b'{"type":"env_var","id":"key","name":"API key","varName":"KEY"}'
    # The one difference on re-encoding: the default member does not write its implied tag.
    again = codec.to_builtins(response)["authMethods"][1]
    assert again == {"id": "again", "name": "Agent"}


def test_malformed_default_auth_method_fails_instead_of_becoming_another_member() -> None:
    with pytest.raises(msgspec.ValidationError, match="name"):
        codec.decode(b'[{"id":"login"}]', list[t.AuthMethod])


def test_mcp_servers_default_known_and_unknown() -> None:
    wire = (
        b'{"cwd":"/w","mcpServers":['
        b'{"name":"fs","command":"/bin/fs","args":[],"env":[]},'
        b'{"type":"http","name":"web","url":"https://example.invalid/mcp","headers":[]},'
        b'{"type":"websocket","name":"ws","url":"wss://example.invalid"}]}'
    )
    request = codec.decode(wire, t.NewSessionRequest)
    assert [type(s) for s in request.mcp_servers] == [t.McpServerStdio, t.McpServerHttp, t.UnknownMcpServer]
    assert same_json(codec.encode(request), wire)
    unstable = codec.decode(
        b'{"cwd":"/w","mcpServers":[{"type":"acp","name":"a","serverId":"x"},{"type":"grpc","name":"g"}]}',
        u.NewSessionRequest,
    )
    assert [type(s) for s in unstable.mcp_servers] == [u.McpServerAcp, u.UnknownMcpServer]


def test_unknown_config_option_kind_is_kept() -> None:
    wire = b'{"sessionId":"s","configOptions":[{"type":"slider","id":"t","name":"Temp","min":0}]}'
    response = codec.decode(wire, t.NewSessionResponse)
    assert response.config_options is not None and not isinstance(response.config_options, msgspec.UnsetType)
    option = response.config_options[0]
    assert isinstance(option, t.UnknownSessionConfigOption) and option.tag == "slider"
    assert codec.encode(response) == wire


def test_set_config_option_value_id_boolean_and_unknown_type() -> None:
    """v1 says: no `type` is a value id, `boolean` a bool, and an unknown `type` with a string payload a value id."""
    for wire, value in [
        (b'{"sessionId":"s","configId":"model","value":"opus"}', "opus"),
        (b'{"sessionId":"s","configId":"fast","type":"boolean","value":true}', True),
        (b'{"sessionId":"s","configId":"model","type":"_acme/alias","value":"best"}', "best"),
    ]:
        request = codec.decode(wire, t.SetSessionConfigOptionRequest)
        assert request.value == value
        assert same_json(codec.encode(request), wire)
    with pytest.raises(msgspec.ValidationError, match="value"):
        codec.decode(b'{"sessionId":"s","configId":"model"}', t.SetSessionConfigOptionRequest)


def test_unknown_elicitation_mode_property_type_and_action() -> None:
    mode = codec.decode(b'{"mode":"_voice","sessionId":"s","message":"Say it"}', t.CreateElicitationRequest)
    assert isinstance(mode, t.UnknownCreateElicitationRequest) and mode.tag == "_voice"
    form = codec.decode(
        b'{"mode":"form","sessionId":"s","message":"m","requestedSchema":{"type":"object","properties":'
        b'{"name":{"type":"string"},"colour":{"type":"_colour_picker","palette":"web"}}}}',
        t.CreateElicitationRequest,
    )
    assert isinstance(form, t.ElicitationFormMode)
    properties = form.requested_schema.properties
    assert isinstance(properties, dict)
    assert isinstance(properties["name"], t.StringPropertySchema)
    assert isinstance(properties["colour"], t.UnknownElicitationPropertySchema)
    action = codec.decode(b'{"action":"postpone","until":"tomorrow"}', t.CreateElicitationResponse)
    assert isinstance(action, t.UnknownCreateElicitationResponse)


def test_unrecognized_state_is_not_the_schemas_unknown_state() -> None:
    """v1 unstable has a `state: "unknown"` member called UnknownStateUpdate; a state nobody knows is Unrecognized."""

    def subagent(state: bytes) -> bytes:
        return notification(b'{"sessionUpdate":"subagent_update","sessionId":"child","state":' + state + b"}")

    known_unknown = codec.decode(subagent(b'{"state":"unknown"}'), u.SessionNotification)
    assert isinstance(known_unknown.update, u.SubagentUpdate)
    assert isinstance(known_unknown.update.state, u.UnknownStateUpdate)
    wire = subagent(b'{"state":"hibernating","since":3}')
    future = codec.decode(wire, u.SessionNotification)
    assert isinstance(future.update, u.SubagentUpdate)
    assert isinstance(future.update.state, u.UnrecognizedStateUpdate) and future.update.state.tag == "hibernating"
    assert codec.encode(future) == wire


def test_unknown_plan_content_in_unstable() -> None:
    wire = notification(b'{"sessionUpdate":"plan_update","plan":{"type":"gantt","bars":[]}}')
    decoded = codec.decode(wire, u.SessionNotification)
    assert isinstance(decoded.update, u.PlanUpdate)
    assert isinstance(decoded.update.plan, u.UnknownPlanUpdateContent)
    assert codec.encode(decoded) == wire


# ---------------------------------------------------------------------------------------------
# Tri-state patch fields: omitted (unchanged), null (cleared) and a value (replaced) stay apart.

PATCH_PROPERTY = re.compile(r"null`? (to clear|clears|removes)|`null` or `\[\]` clears|Set to null to clear", re.I)
PATCH_DEFINITION = re.compile(r"((?:`\w+`,? (?:and )?)+)have patch semantics")


def patch_fields(schema: dict[str, Any]) -> list[tuple[str, str]]:
    """(definition, property) pairs the schema's own words mark as patches (null clears, omission keeps)."""
    found = []
    for name, d in schema["$defs"].items():
        marked = PATCH_DEFINITION.search(re.sub(r"\s+", " ", d.get("description", "")))
        listed = set(re.findall(r"`(\w+)`", marked.group(1))) if marked else set()
        for prop, p in d.get("properties", {}).items():
            if prop in listed or PATCH_PROPERTY.search(p.get("description", "")):
                found.append((name, prop))
    return found


def check_tri_state(cls: Any, wire_name: str) -> None:
    field = next(f for f in msgspec.structs.fields(cls) if f.encode_name == wire_name)
    base = codec.to_builtins(build(cls, full=False))
    value = codec.to_builtins(build(cls, full=True))[wire_name]
    assert value is not None
    omitted = {k: v for k, v in base.items() if k != wire_name}
    cases = [(omitted, msgspec.UNSET), ({**omitted, wire_name: None}, None), ({**omitted, wire_name: value}, value)]
    for obj, expected in cases:
        wire = msgspec.json.encode(obj)
        decoded = codec.decode(wire, cls)
        got = getattr(decoded, field.name)
        if expected is msgspec.UNSET or expected is None:
            assert got is expected, f"{cls.__name__}.{field.name}: {got!r}"
        else:
            assert codec.to_builtins(got) == expected
        assert msgspec.json.decode(codec.encode(decoded)) == obj


@pytest.mark.parametrize(
    ("module", "file"), [(t, "schema.json"), (u, "schema.unstable.json")], ids=["stable", "unstable"]
)
def test_patch_fields_keep_omitted_null_and_value_apart(
    module: types.ModuleType, file: str, v1_schema_dir: Path
) -> None:
    schema = msgspec.json.decode((v1_schema_dir / file).read_bytes())
    fields = patch_fields(schema)
    assert {("SessionInfoUpdate", "title"), ("SessionInfoUpdate", "updatedAt"), ("CompactionUpdate", "summary")} <= set(
        fields
    )
    if module is u:
        assert ("SubagentUpdate", "state") in fields and ("SessionMessage", "content") in fields
    for name, prop in fields:
        check_tri_state(getattr(module, name) if hasattr(module, name) else getattr(t, name), prop)


def test_tool_call_update_patch_fields() -> None:
    omitted = codec.decode(b'{"toolCallId":"c"}', t.ToolCallUpdate)
    cleared = codec.decode(b'{"toolCallId":"c","content":null,"title":null}', t.ToolCallUpdate)
    replaced = codec.decode(b'{"toolCallId":"c","content":[],"title":"T"}', t.ToolCallUpdate)
    assert (omitted.content, cleared.content, replaced.content) == (msgspec.UNSET, None, [])
    assert (omitted.title, cleared.title, replaced.title) == (msgspec.UNSET, None, "T")
    assert codec.encode(omitted) == b'{"toolCallId":"c"}'
    assert codec.encode(cleared) == b'{"toolCallId":"c","title":null,"content":null}'
    assert codec.encode(replaced) == b'{"toolCallId":"c","title":"T","content":[]}'
