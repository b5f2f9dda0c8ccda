"""Every generated struct, of both protocol versions, encodes to JSON the official schema of its version accepts,
and decodes back equal; the method tables list every method of that schema. (v1's sample messages as agents send
them: test_v1_wire_validation.py.)"""

from __future__ import annotations

import types
from typing import Any

import jsonschema
import msgspec
import pytest

from acp_session import codec
from acp_session.schema import types as stable
from acp_session.schema import unstable
from acp_session.schema.v1 import types as v1_stable
from acp_session.schema.v1 import unstable as v1_unstable
from tests.schema.builders import build, schema_home, struct_classes

MODULES = [
    pytest.param(stable, id="v2-stable"),
    pytest.param(unstable, id="v2-unstable"),
    pytest.param(v1_stable, id="v1-stable"),
    pytest.param(v1_unstable, id="v1-unstable"),
]
V1 = (v1_stable, v1_unstable)


def validator_for(schema: dict[str, Any], name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": schema["$defs"]})


@pytest.fixture(scope="module")
def schemas(
    stable_schema: dict[str, Any],
    unstable_schema: dict[str, Any],
    v1_stable_schema: dict[str, Any],
    v1_unstable_schema: dict[str, Any],
) -> dict[str, dict[str, Any]]:
    return {
        stable.__name__: stable_schema,
        unstable.__name__: unstable_schema,
        v1_stable.__name__: v1_stable_schema,
        v1_unstable.__name__: v1_unstable_schema,
    }


PLACEHOLDER = "x"  # what tests/schema/builders.py puts in every string field
ANY_PLACEHOLDER = {"any": [1, "two"]}  # ... and in every field typed Any


def placeholder_misses(errors: Any) -> list[tuple[tuple[Any, ...], Any]]:
    """Where a placeholder is not valid v1, and what to put there instead (innermost errors only)."""
    out = []
    for error in errors:
        if error.context:
            out += placeholder_misses(error.context)
        elif error.validator == "const" and error.instance == PLACEHOLDER:
            out.append((tuple(error.absolute_path), error.validator_value))
        elif error.instance == ANY_PLACEHOLDER:
            out.append((tuple(error.absolute_path), PLACEHOLDER))
    return out


def valid_placeholders(validator: jsonschema.Draft202012Validator, obj: Any) -> Any:
    """``obj`` with each builder placeholder the v1 schema rejects replaced by a value it accepts.

    The builders fill every string with a placeholder, which v2's open enums accept; v1 closes its enums
    in the schema (the code keeps them open), so a valid v1 message needs a known value there. Likewise
    v1's ``ElicitationContentValue`` is typed ``Any`` (scalars or a string list) but is no JSON object.
    """
    for _ in range(20):
        misses = placeholder_misses(validator.iter_errors(obj))
        if not misses:
            return obj
        fixed: set[tuple[Any, ...]] = set()
        for path, replacement in misses:
            if path in fixed or not path:
                continue
            fixed.add(path)
            parent = obj
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = replacement
    return obj


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("full", [False, True], ids=["required-only", "all-fields"])
def test_every_struct_validates_and_round_trips(
    module: types.ModuleType, full: bool, schemas: dict[str, dict[str, Any]]
) -> None:
    schema = schemas[module.__name__]
    failures = []
    classes = struct_classes(module)
    assert len(classes) > (100 if module in (stable, v1_stable) else 20)
    for cls in classes:
        home, decode_as = schema_home(module, cls, schema["$defs"])
        validator = validator_for(schema, home)
        obj = codec.to_builtins(build(cls, full=full))
        if module in V1:
            obj = valid_placeholders(validator, obj)  # v1's schema closes its enums
        wire = msgspec.json.encode(obj)
        errors = [e.message for e in validator.iter_errors(obj)]
        if errors:
            failures.append(f"{cls.__name__} as {home}: {errors[:2]} in {wire!r}")
            continue
        back = codec.decode(wire, decode_as)
        if type(back) is not cls or codec.to_builtins(back) != obj:
            failures.append(f"{cls.__name__}: decoded {back!r} != {obj!r}")
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
