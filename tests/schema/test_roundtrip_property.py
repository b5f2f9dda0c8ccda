"""Property: generated instances of the main message types encode to schema-valid JSON and decode back equal."""

from __future__ import annotations

import contextlib
from typing import Any

import jsonschema
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_session import codec
from acp_session.schema import types as t
from tests.schema.builders import strategy

MAIN_TYPES = {
    "UpdateSessionNotification": t.UpdateSessionNotification,
    "SessionUpdate": t.SessionUpdate,
    "PromptRequest": t.PromptRequest,
    "RequestPermissionRequest": t.RequestPermissionRequest,
    "RequestPermissionResponse": t.RequestPermissionResponse,
    "InitializeRequest": t.InitializeRequest,
    "InitializeResponse": t.InitializeResponse,
    "NewSessionResponse": t.NewSessionResponse,
    "ResumeSessionRequest": t.ResumeSessionRequest,
    "SetSessionConfigOptionRequest": t.SetSessionConfigOptionRequest,
    "SetSessionConfigOptionResponse": t.SetSessionConfigOptionResponse,
    "ListSessionsResponse": t.ListSessionsResponse,
    "CreateElicitationRequest": t.CreateElicitationRequest,
}


@pytest.mark.parametrize("name", sorted(MAIN_TYPES))
def test_generated_instances_round_trip(name: str, stable_schema: dict[str, Any]) -> None:
    tp = MAIN_TYPES[name]
    validator = jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": stable_schema["$defs"]})

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(strategy(tp))
    def check(value: Any) -> None:
        wire = codec.encode(value)
        validator.validate(msgspec.json.decode(wire))
        assert codec.decode(wire, tp) == value

    check()


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_escape_as_other_errors(data: bytes) -> None:
    with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
        codec.decode(data, t.UpdateSessionNotification)


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
json_any = st.recursive(
    json_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategy(t.UpdateSessionNotification), st.data())
def test_mutated_messages_decode_or_fail_cleanly(value: Any, data: st.DataObject) -> None:
    """Replace one value anywhere in a valid message: the result is a typed value or a validation error."""
    tree = codec.to_builtins(value)
    paths: list[list[Any]] = []

    def walk(node: Any, path: list[Any]) -> None:
        paths.append(path)
        if isinstance(node, dict):
            for key, child in node.items():
                walk(child, [*path, key])
        elif isinstance(node, list):
            for index, child in enumerate(node):
                walk(child, [*path, index])

    walk(tree, [])
    path = data.draw(st.sampled_from(paths[1:]))
    parent = tree
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = data.draw(json_any)
    try:
        decoded = codec.decode(msgspec.json.encode(tree), t.UpdateSessionNotification)
    except msgspec.ValidationError:
        return
    assert isinstance(decoded, t.UpdateSessionNotification)
    codec.encode(decoded)
