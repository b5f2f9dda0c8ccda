"""Unknown variants, extension values, unknown fields and malformed lenient fields: exact behaviour.

The rules both protocol versions share run on both (``VERSIONS``): a v2 message chunk carries a ``messageId``,
a v1 one has none, and a v2 notification is ``UpdateSessionNotification``, a v1 one ``SessionNotification``.
v1's own cases (its defaults, closed enums kept open, patch fields): test_v1_forward_compat.py."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from acp_session import codec
from acp_session.schema import types as t
from acp_session.schema.v1 import types as t1


def notification(update: bytes) -> bytes:
    return b'{"sessionId":"s1","update":' + update + b"}"


# Per version: the notification type, the module of the generated types, and what a message chunk adds for its id.
VERSIONS = [
    pytest.param(t.UpdateSessionNotification, t, b'"messageId":"m",', {"message_id": "m"}, id="v2"),
    pytest.param(t1.SessionNotification, t1, b"", {}, id="v1"),
]
VERSION_ARGS = ("notification_type", "module", "message_id", "id_fields")


@pytest.mark.parametrize(VERSION_ARGS, VERSIONS)
def test_unknown_session_update_is_kept_raw_and_round_trips(
    notification_type: type, module: Any, message_id: bytes, id_fields: dict[str, str]
) -> None:
    wire = notification(b'{"sessionUpdate":"hologram_update","depth":[1,{"z":null}],"_meta":{"a":1}}')
    decoded = codec.decoder(notification_type)(wire)
    assert isinstance(decoded, notification_type)
    assert isinstance(decoded.update, module.UnknownSessionUpdate)
    assert decoded.update.tag == "hologram_update"
    assert not decoded.update.is_extension
    assert decoded.update["depth"] == [1, {"z": None}]
    assert codec.encode(decoded) == wire


@pytest.mark.parametrize(VERSION_ARGS, VERSIONS)
def test_underscore_variant_is_an_extension(
    notification_type: type, module: Any, message_id: bytes, id_fields: dict[str, str]
) -> None:
    wire = notification(b'{"sessionUpdate":"_acme/ping","n":1}')
    decoded = codec.decode(wire, notification_type)
    assert isinstance(decoded.update, module.UnknownSessionUpdate)
    assert decoded.update.is_extension
    assert codec.encode(decoded) == wire


def test_unknown_nested_variant_keeps_its_known_siblings() -> None:
    wire = notification(
        b'{"sessionUpdate":"agent_message","messageId":"m","content":'
        b'[{"type":"text","text":"a"},{"type":"_acme/sketch","strokes":3},{"type":"text","text":"b"}]}'
    )
    decoded = codec.decode(wire, t.UpdateSessionNotification)
    assert isinstance(decoded.update, t.AgentMessage)
    content = decoded.update.content
    assert isinstance(content, list)
    assert [type(c) for c in content] == [t.TextContent, t.UnknownContentBlock, t.TextContent]
    assert msgspec.json.decode(codec.encode(decoded)) == msgspec.json.decode(wire)


@pytest.mark.parametrize("status", ["_acme/queued", "rewinding"])
def test_unknown_enum_values_are_preserved(status: str) -> None:
    wire = notification(
        b'{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"' + status.encode() + b'","kind":"_x"}'
    )
    decoded = codec.decode(wire, t.UpdateSessionNotification)
    assert isinstance(decoded.update, t.ToolCallUpdated)
    assert decoded.update.status == status
    assert status not in t.TOOL_CALL_STATUS_VALUES
    assert msgspec.json.decode(codec.encode(decoded)) == msgspec.json.decode(wire)


def test_unknown_state_value_is_kept() -> None:
    wire = notification(b'{"sessionUpdate":"state_update","state":"hibernating"}')
    decoded = codec.decode(wire, t.UpdateSessionNotification)
    assert isinstance(decoded.update, t.StateUpdate)
    assert decoded.update.state == "hibernating"
    assert codec.encode(decoded) == wire


@pytest.mark.parametrize(VERSION_ARGS, VERSIONS)
def test_unknown_fields_on_known_types_are_ignored(
    notification_type: type, module: Any, message_id: bytes, id_fields: dict[str, str]
) -> None:
    wire = notification(
        b'{"sessionUpdate":"agent_message_chunk",' + message_id + b'"futureField":{"a":1},'
        b'"content":{"type":"text","text":"hi","alsoNew":true}}'
    )
    decoded = codec.decode(wire, notification_type)
    assert decoded.update == module.AgentMessageChunk(**id_fields, content=module.TextContent(text="hi"))
    assert b"futureField" not in codec.encode(decoded)


def test_malformed_default_on_error_field_falls_back_to_omitted() -> None:
    # `_meta` and `kind` carry x-deserialize-default-on-error: a wrong type does not fail the message.
    wire = notification(b'{"sessionUpdate":"tool_call_update","toolCallId":"c1","kind":42,"_meta":"nope","title":"T"}')
    decoded = codec.decode(wire, t.UpdateSessionNotification)
    assert decoded.update == t.ToolCallUpdated(tool_call_id="c1", title="T")
    assert decoded.update.kind is msgspec.UNSET


def test_skip_invalid_items_keeps_the_good_ones() -> None:
    wire = notification(
        b'{"sessionUpdate":"plan_update","plan":{"type":"items","planId":"p","entries":['
        b'{"content":"a","priority":"high","status":"pending"},{"content":7},'
        b'{"content":"c","priority":"low","status":"completed"}]}}'
    )
    decoded = codec.decode(wire, t.UpdateSessionNotification)
    assert isinstance(decoded.update, t.PlanUpdate)
    assert isinstance(decoded.update.plan, t.PlanItems)
    assert [e.content for e in decoded.update.plan.entries] == ["a", "c"]


def test_default_on_null_field_becomes_omitted() -> None:
    wire = b'{"cwd":"/w","mcpServers":null,"additionalDirectories":null}'
    decoded = codec.decode(wire, t.NewSessionRequest)
    assert decoded.mcp_servers is msgspec.UNSET
    assert decoded.additional_directories is msgspec.UNSET


def test_tri_state_patch_fields_keep_omitted_null_and_value_apart() -> None:
    omitted = codec.decode(b'{"toolCallId":"c"}', t.ToolCallUpdate)
    cleared = codec.decode(b'{"toolCallId":"c","content":null}', t.ToolCallUpdate)
    replaced = codec.decode(b'{"toolCallId":"c","content":[]}', t.ToolCallUpdate)
    assert (omitted.content, cleared.content, replaced.content) == (msgspec.UNSET, None, [])
    assert codec.encode(omitted) == b'{"toolCallId":"c"}'
    assert codec.encode(cleared) == b'{"toolCallId":"c","content":null}'
    assert codec.encode(replaced) == b'{"toolCallId":"c","content":[]}'


@pytest.mark.parametrize(VERSION_ARGS, VERSIONS)
def test_wrong_required_field_fails_with_its_path(
    notification_type: type, module: Any, message_id: bytes, id_fields: dict[str, str]
) -> None:
    wire = notification(
        b'{"sessionUpdate":"agent_message_chunk",' + message_id + b'"content":{"type":"text","text":5}}'
    )
    with pytest.raises(msgspec.ValidationError, match=r"\$\.update\.content\.text"):
        codec.decode(wire, notification_type)


def test_missing_tag_fails() -> None:
    with pytest.raises(msgspec.ValidationError, match="sessionUpdate"):
        codec.decode(notification(b'{"messageId":"m"}'), t.UpdateSessionNotification)


def test_malformed_json_is_a_decode_error() -> None:
    with pytest.raises(msgspec.DecodeError):
        codec.decode(b'{"sessionId":', t.UpdateSessionNotification)


def test_untagged_union_picks_the_fitting_alternative() -> None:
    blob = codec.decode(b'{"type":"resource","resource":{"uri":"file:///a","blob":"AAE="}}', t.EmbeddedResource)
    text = codec.decode(b'{"type":"resource","resource":{"uri":"file:///a","text":"hi"}}', t.EmbeddedResource)
    assert isinstance(blob.resource, t.BlobResourceContents)
    assert isinstance(text.resource, t.TextResourceContents)


def test_grouped_and_flat_select_options() -> None:
    flat = b'{"type":"select","configId":"mode","name":"Mode","currentValue":"a","options":[{"value":"a","name":"A"}]}'
    grouped = (
        b'{"type":"select","configId":"mode","name":"Mode","currentValue":"a",'
        b'"options":[{"groupId":"g","name":"G","options":[{"value":"a","name":"A"}]}]}'
    )
    flat_option = codec.decode(flat, t.SessionConfigOption)
    grouped_option = codec.decode(grouped, t.SessionConfigOption)
    assert isinstance(flat_option, t.SessionConfigSelect) and isinstance(grouped_option, t.SessionConfigSelect)
    assert isinstance(flat_option.options[0], t.SessionConfigSelectOption)
    assert isinstance(grouped_option.options[0], t.SessionConfigSelectGroup)
    assert msgspec.json.decode(codec.encode(grouped_option)) == msgspec.json.decode(grouped)


def test_unknown_config_option_kind_is_kept() -> None:
    wire = b'{"type":"slider","configId":"t","name":"Temp","min":0}'
    option = codec.decode(wire, t.SessionConfigOption)
    assert isinstance(option, t.UnknownSessionConfigOption)
    assert option.tag == "slider"
    assert codec.encode(option) == wire


def test_unknown_elicitation_mode_and_property_type_stay_unknown_acp2_025_acp2_026() -> None:
    """ACP2-025, ACP2-026: an unknown mode or input-control type never decodes as a known one."""
    unknown_mode = codec.decode(b'{"mode":"_voice","sessionId":"s","message":"Say it"}', t.CreateElicitationRequest)
    assert isinstance(unknown_mode, t.UnknownCreateElicitationRequest) and unknown_mode.tag == "_voice"
    form = codec.decode(
        b'{"mode":"form","sessionId":"s","message":"m","requestedSchema":{"type":"object","properties":'
        b'{"name":{"type":"string"},"colour":{"type":"_colour_picker","palette":"web"}}}}',
        t.CreateElicitationRequest,
    )
    assert isinstance(form, t.ElicitationFormMode)
    properties = form.requested_schema.properties
    assert isinstance(properties["name"], t.StringPropertySchema)
    assert isinstance(properties["colour"], t.UnknownElicitationPropertySchema)
    assert properties["colour"]["palette"] == "web"


def test_lenient_pass_keeps_the_schema_bounds() -> None:
    """Even when an unknown variant sends a message down the lenient path, minItems and the like still hold."""
    zero_options = b'{"sessionId":"s","title":"Run?","options":[],"subject":{"type":"_x"}}'
    with pytest.raises(msgspec.ValidationError, match=r"length >= 1 - at `\$\.options`"):
        codec.decode(zero_options, t.RequestPermissionRequest)
    with pytest.raises(msgspec.ValidationError, match=r"\$\.options"):
        codec.decode(b'{"sessionId":"s","title":"Run?","options":[]}', t.RequestPermissionRequest)
    size = b'{"sessionUpdate":"terminal_update","terminalId":"t","size":{"cols":0,"rows":5},"_meta":7}'
    update = codec.decode(size, t.SessionUpdate)  # size is default-on-error: the bad bound drops it
    assert isinstance(update, t.TerminalUpdate) and update.size is msgspec.UNSET


def test_skip_invalid_items_still_respects_min_items() -> None:
    """A select group keeps its valid options; if none is valid, minItems fails the group, not the message."""

    def option(groups: bytes) -> bytes:
        return b'{"type":"select","configId":"m","name":"M","currentValue":"a","options":[' + groups + b"]}"

    one_bad = option(b'{"groupId":"g","name":"G","options":[{"value":"a","name":"A"},{"value":7}]}')
    kept = codec.decode(one_bad, t.SessionConfigOption)
    assert isinstance(kept, t.SessionConfigSelect)
    assert [o.value for o in kept.options[0].options] == ["a"]
    all_bad = option(b'{"groupId":"g","name":"G","options":[{"value":7}]}')
    with pytest.raises(msgspec.ValidationError):
        codec.decode(all_bad, t.SessionConfigOption)
