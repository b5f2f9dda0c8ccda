"""Every generated struct encodes to JSON the official schema accepts, and decodes back equal."""

from __future__ import annotations

import types
from typing import Any

import jsonschema
import pytest

from acp_session import codec
from acp_session.schema import types as stable
from acp_session.schema import unstable
from tests.schema.builders import build, schema_home, struct_classes

MODULES = [pytest.param(stable, id="stable"), pytest.param(unstable, id="unstable")]


def validator_for(schema: dict[str, Any], name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": schema["$defs"]})


@pytest.fixture(scope="module")
def schemas(stable_schema: dict[str, Any], unstable_schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {stable.__name__: stable_schema, unstable.__name__: unstable_schema}


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("full", [False, True], ids=["required-only", "all-fields"])
def test_every_struct_validates_and_round_trips(
    module: types.ModuleType, full: bool, schemas: dict[str, dict[str, Any]]
) -> None:
    schema = schemas[module.__name__]
    failures = []
    classes = struct_classes(module)
    assert len(classes) > (100 if module is stable else 20)
    for cls in classes:
        home, decode_as = schema_home(module, cls, schema["$defs"])
        value = build(cls, full=full)
        wire = codec.encode(value)
        errors = [e.message for e in validator_for(schema, home).iter_errors(codec.to_builtins(value))]
        if errors:
            failures.append(f"{cls.__name__} as {home}: {errors[:2]} in {wire!r}")
            continue
        back = codec.decode(wire, decode_as)
        if back != value or type(back) is not type(value):
            failures.append(f"{cls.__name__}: decoded {back!r} != {value!r}")
    assert failures == []


@pytest.mark.parametrize("module", MODULES)
def test_method_tables_cover_every_method_in_the_schema(module: types.ModuleType, schemas: dict[str, Any]) -> None:
    schema = schemas[module.__name__]
    expected = {(d["x-method"], d["x-side"]) for d in schema["$defs"].values() if "x-method" in d}
    tables = {
        "agent": {**module.AGENT_METHODS, **module.AGENT_NOTIFICATIONS},
        "client": {**module.CLIENT_METHODS, **module.CLIENT_NOTIFICATIONS},
        "protocol": module.PROTOCOL_NOTIFICATIONS,
    }
    if hasattr(module, "PROXY_METHODS"):
        tables["proxy"] = {**module.PROXY_METHODS, **module.PROXY_NOTIFICATIONS}
    found = {(method, side) for side, table in tables.items() for method in table}
    assert found == expected
    for spec in module.AGENT_METHODS.values():
        assert spec.handled_by == "agent" and spec.params is not None and spec.result is not None


def test_session_prompt_and_update_method_entries() -> None:
    prompt = stable.AGENT_METHODS["session/prompt"]
    assert (prompt.params, prompt.result) == (stable.PromptRequest, stable.PromptResponse)
    assert stable.CLIENT_NOTIFICATIONS["session/update"].params is stable.UpdateSessionNotification
    assert stable.CLIENT_METHODS["session/request_permission"].result is stable.RequestPermissionResponse
    assert stable.PROTOCOL_NOTIFICATIONS["$/cancel_request"].params is stable.CancelRequestNotification
    assert "session/fork" not in stable.AGENT_METHODS and "session/fork" in unstable.AGENT_METHODS
