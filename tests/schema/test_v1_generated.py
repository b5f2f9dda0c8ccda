"""The committed ``acp_session/schema/v1/`` is exactly what the generator makes from the official v1 schema,
and every union the v1 schema closes is open in it (as the v2 schema's own catch-alls make v2's)."""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import msgspec
import pytest

from acp_session import codec
from acp_session._schema_runtime import _ALTERNATIVES, _OPEN_UNIONS, OtherVariant, UnknownVariant
from acp_session.schema import v1
from acp_session.schema.v1 import types as v1_types
from acp_session.schema.v1 import unstable as v1_unstable
from tests.schema.builders import build
from tests.schema_source import REPO

V1_DIR = REPO / "acp_session" / "schema" / "v1"
MODULES = [
    pytest.param(v1_types, "schema.json", id="stable"),
    pytest.param(v1_unstable, "schema.unstable.json", id="unstable"),
]


def load_generator() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("acp_schema_generate", REPO / "schema" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def lookup(module: types.ModuleType, name: str) -> Any:
    """A generated name as ``module`` sees it (``unstable`` defines only what differs from ``types``)."""
    return getattr(module, name) if hasattr(module, name) else getattr(v1_types, name)


def run_generator(*args: str) -> None:
    subprocess.run([sys.executable, str(REPO / "schema" / "generate.py"), *args], check=True)


def test_regenerating_v1_gives_no_diff(v1_schema_dir: Path, tmp_path: Path) -> None:
    """The version is inferred from the schema (no --version), and --open-unions is on for v1 by default."""
    run_generator(str(v1_schema_dir), "--out", str(tmp_path))
    generated = sorted(p.name for p in tmp_path.glob("*.py"))
    assert generated == sorted(p.name for p in V1_DIR.glob("*.py")) == ["__init__.py", "types.py", "unstable.py"]
    for name in generated:
        assert (tmp_path / name).read_text() == (V1_DIR / name).read_text(), f"v1/{name} is stale: regenerate"


def test_explicit_version_and_option_give_the_same_files(v1_schema_dir: Path, tmp_path: Path) -> None:
    run_generator(str(v1_schema_dir), "--version", "1", "--open-unions", "--out", str(tmp_path))
    for name in ("__init__.py", "types.py", "unstable.py"):
        assert (tmp_path / name).read_text() == (V1_DIR / name).read_text()


def test_without_open_unions_v1_keeps_the_schema_closed(v1_schema_dir: Path, tmp_path: Path) -> None:
    run_generator(str(v1_schema_dir), "--no-open-unions", "--out", str(tmp_path))
    text = (tmp_path / "types.py").read_text()
    assert "UnknownSessionUpdate" not in text
    assert "StopReason: TypeAlias = Literal[" in text
    assert "Opened (``--open-unions``)" not in text


def test_version_is_inferred_from_the_schema_links(
    v1_stable_schema: dict[str, Any], stable_schema: dict[str, Any]
) -> None:
    generator = load_generator()
    assert generator.infer_version(v1_stable_schema) == 1
    assert generator.infer_version(stable_schema) == 2
    with pytest.raises(SystemExit, match="--version"):
        generator.infer_version({"$defs": {}})
    assert generator.package_for(1) == "acp_session.schema.v1"
    assert generator.package_for(2) == "acp_session.schema"


def test_v1_files_say_v1_and_import_from_their_own_package() -> None:
    for name in ("__init__.py", "types.py", "unstable.py"):
        text = (V1_DIR / name).read_text()
        assert "ACP v1" in text and "ACP v2" not in text, name
        assert "acp_session.schema.types" not in text, name
    assert "from acp_session.schema.v1.types import" in (V1_DIR / "unstable.py").read_text()
    assert "from acp_session.schema.v1.types import *" in (V1_DIR / "__init__.py").read_text()
    assert v1.SessionNotification is v1_types.SessionNotification
    assert v1_unstable.ContentBlock is v1_types.ContentBlock  # unchanged in unstable: imported, not redefined


def test_v1_code_records_the_schema_hashes(v1_schema_dir: Path) -> None:
    assert hashlib.sha256((v1_schema_dir / "schema.json").read_bytes()).hexdigest() == v1.SCHEMA_SHA256
    unstable = hashlib.sha256((v1_schema_dir / "schema.unstable.json").read_bytes()).hexdigest()
    assert unstable == v1.UNSTABLE_SCHEMA_SHA256
    for name, digest in (("types.py", v1.SCHEMA_SHA256), ("unstable.py", v1.UNSTABLE_SCHEMA_SHA256)):
        assert f"sha256 {digest}" in (V1_DIR / name).read_text()


def test_v1_code_copies_no_schema_descriptions(v1_unstable_schema: dict[str, Any]) -> None:
    text = (V1_DIR / "types.py").read_text() + (V1_DIR / "unstable.py").read_text()
    long_sentences = {
        sentence.strip()
        for d in v1_unstable_schema["$defs"].values()
        for sentence in str(d.get("description", "")).split(".")
        if len(sentence.strip()) > 40
    }
    assert long_sentences
    assert not [s for s in long_sentences if s in text]


@pytest.mark.parametrize(("module", "file"), MODULES)
def test_every_v1_definition_has_a_python_name(module: types.ModuleType, file: str, v1_schema_dir: Path) -> None:
    defs = msgspec.json.decode((v1_schema_dir / file).read_bytes())["$defs"]
    assert [name for name in defs if not hasattr(module, name) and not hasattr(v1_types, name)] == []


# ---------------------------------------------------------------------------------------------
# Every union the v1 schema closes is open in the code.


def schema_unions(schema: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {
        name: d.get("anyOf") or d.get("oneOf")
        for name, d in schema["$defs"].items()
        if (d.get("anyOf") or d.get("oneOf")) and not d.get("x-docs-ignore")
    }


def string_enums(schema: dict[str, Any]) -> dict[str, list[str]]:
    """Every definition that is a union of string constants (closed in v1, or with a catch-all)."""
    out = {}
    for name, alts in schema_unions(schema).items():
        consts = [a["const"] for a in alts if "const" in a]
        if (
            consts
            and all(isinstance(c, str) for c in consts)
            and all("const" in a or a.get("type") == "string" for a in alts)
        ):
            out[name] = consts
    return out


def tagged_unions(schema: dict[str, Any]) -> dict[str, str]:
    """Every definition with alternatives told apart by a string ``const`` property: name -> tag field."""
    out = {}
    for name, alts in schema_unions(schema).items():
        fields = {
            key
            for alt in alts
            for key, prop in alt.get("properties", {}).items()
            if isinstance(prop, dict) and isinstance(prop.get("const"), str)
        }
        if len(fields) == 1:
            out[name] = fields.pop()
    return out


@pytest.mark.parametrize(("module", "file"), MODULES)
def test_every_v1_string_enum_is_open(module: types.ModuleType, file: str, v1_schema_dir: Path) -> None:
    schema = msgspec.json.decode((v1_schema_dir / file).read_bytes())
    enums = string_enums(schema)
    assert {"StopReason", "ToolKind", "ToolCallStatus", "PlanEntryStatus", "PermissionOptionKind"} <= set(enums)
    for name, consts in enums.items():
        assert lookup(module, name) is str, f"{name} is not an open enum"
        values_name = "".join(f"_{c}" if c.isupper() and i else c for i, c in enumerate(name)).upper() + "_VALUES"
        assert lookup(module, values_name) == frozenset(consts), values_name
    assert "TypeAlias = Literal[" not in (V1_DIR / "types.py").read_text() + (V1_DIR / "unstable.py").read_text()


def unknown_member(module: types.ModuleType, name: str, tag_field: str) -> tuple[Any, Any]:
    """The Python type of union ``name`` and an object of it with an unknown tag (plus whatever it requires)."""
    union = lookup(module, name)
    obj: dict[str, Any] = {}
    if isinstance(union, type) and issubclass(union, msgspec.Struct):
        obj = codec.to_builtins(build(union, full=False))
    obj.update({tag_field: "_acme/future", "payload": [1, {"deep": None}]})
    return union, obj


@pytest.mark.parametrize(("module", "file"), MODULES)
def test_every_v1_tagged_union_keeps_unknown_members(module: types.ModuleType, file: str, v1_schema_dir: Path) -> None:
    schema = msgspec.json.decode((v1_schema_dir / file).read_bytes())
    unions = tagged_unions(schema)
    expected = {
        "SessionUpdate",
        "ContentBlock",
        "ToolCallContent",
        "RequestPermissionOutcome",
        "AuthMethod",
        "McpServer",
        "SessionConfigOption",
        "CreateElicitationRequest",
        "CreateElicitationResponse",
        "ElicitationPropertySchema",
        "MultiSelectItems",
    }
    assert expected <= set(unions)
    for name, tag_field in unions.items():
        union, obj = unknown_member(module, name, tag_field)
        decoded = codec.decode(msgspec.json.encode(obj), union)
        if isinstance(union, type) and issubclass(union, msgspec.Struct):
            # A merged struct (its discriminator is a plain string field): the value is kept.
            field = next(f for f in msgspec.structs.fields(union) if f.encode_name == tag_field)
            assert getattr(decoded, field.name) == "_acme/future", name
            continue
        assert isinstance(decoded, UnknownVariant), f"{name}: {decoded!r}"
        assert decoded.tag == "_acme/future" and decoded.is_extension
        assert decoded == obj
        assert msgspec.json.decode(codec.encode(decoded)) == obj
        registered = _OPEN_UNIONS.get(union) or next(
            (a.unknown, a.tag_field) for a in _ALTERNATIVES[union] if isinstance(a, OtherVariant)
        )
        assert type(decoded) in registered


def test_unknown_class_names_of_the_main_unions() -> None:
    assert _OPEN_UNIONS[v1_types.SessionUpdate] == ("sessionUpdate", v1_types.UnknownSessionUpdate)
    assert _OPEN_UNIONS[v1_types.ContentBlock] == ("type", v1_types.UnknownContentBlock)
    assert _OPEN_UNIONS[v1_types.ToolCallContent] == ("type", v1_types.UnknownToolCallContent)
    assert _OPEN_UNIONS[v1_types.RequestPermissionOutcome] == ("outcome", v1_types.UnknownRequestPermissionOutcome)
    assert _OPEN_UNIONS[v1_types.SessionConfigOption] == ("type", v1_types.UnknownSessionConfigOption)
    assert issubclass(v1_types.UnknownAuthMethod, UnknownVariant)
    assert issubclass(v1_types.UnknownMcpServer, UnknownVariant)
    # The v1 unstable schema defines `UnknownStateUpdate` itself (the `state: "unknown"` member), so the
    # catch-all of StateUpdate is named Unrecognized…
    assert issubclass(v1_unstable.UnknownStateUpdate, msgspec.Struct)
    assert _OPEN_UNIONS[v1_unstable.StateUpdate] == ("state", v1_unstable.UnrecognizedStateUpdate)


def test_v2_output_has_no_v1_machinery() -> None:
    """The v2 generation is unchanged: no DefaultVariant, no Unrecognized… and no opened-union note."""
    text = (REPO / "acp_session" / "schema" / "types.py").read_text()
    text += (REPO / "acp_session" / "schema" / "unstable.py").read_text()
    assert "DefaultVariant" not in text and "Unrecognized" not in text and "--open-unions" not in text


def test_missing_v1_schema_fails_in_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests import schema_source

    monkeypatch.setattr(schema_source, "candidate_dirs", lambda version=2: [tmp_path / f"v{version}"])
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"ACP v1 schema not found .*package/schema/v1"):
        schema_source.require_schema_dir(1)
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="ACP v1 schema not found"):
        schema_source.require_schema_dir(1)


def test_v1_schema_lookup_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests import schema_source

    monkeypatch.setenv("ACP_V1_SCHEMA_DIR", str(tmp_path))
    monkeypatch.delenv("ACP_SCHEMA_DIR", raising=False)
    dirs = schema_source.candidate_dirs(1)
    assert dirs[0] == tmp_path
    assert [d.parts[-3:] for d in dirs[1:]] == [
        ("spec", "schema", "v1"),
        ("package", "schema", "v1"),
        ("sdk", "schema", "v1"),
    ]
    assert schema_source.candidate_dirs(2)[0] != tmp_path  # v2 has its own variable
