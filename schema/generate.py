"""Generate ``acp_session/schema/`` (msgspec structs) from the official ACP JSON schema (v2 or v1).

Usage::

    python schema/generate.py SCHEMA_DIR [--version N] [--out DIR] [--open-unions | --no-open-unions]

``SCHEMA_DIR`` holds ``schema.json`` and ``schema.unstable.json`` (for example
``../shared/spec/schema/v2``). Stable types go to ``types.py``; types and methods that
exist only, or differently, in the unstable schema go to ``unstable.py``.

The protocol version is inferred from the schema's own documentation links
(``.../protocol/vN/...``) unless ``--version`` gives it. Version 2 is written to the package
``acp_session.schema`` (``acp_session/schema/``), any other version N to
``acp_session.schema.vN`` (``acp_session/schema/vN/``); ``--out`` only changes the folder.
``--open-unions`` (the default for every version but 2) first gives every closed tagged
union and closed string enum of the schema a catch-all, so that the output is as
forward-compatible as the v2 one, whose schema has those catch-alls itself.

How schema shapes map to Python (see docs/schema.md for the why):

* object → ``AcpStruct`` subclass; optional fields default to ``UNSET``;
* ``anyOf`` of objects tagged by one ``const`` property (+ an ``other`` catch-all) →
  a msgspec tagged union of the known members plus an ``Unknown…`` dict class;
* a tagged union nested as the member of another one (two tag fields) → one merged
  struct whose inner discriminator is a plain field;
* untagged ``anyOf`` of objects or of arrays → a marker type resolved by trying the
  alternatives in schema order;
* ``anyOf`` of string or integer ``const`` values (+ a catch-all) → an open enum:
  the plain scalar type plus a frozenset of the known values.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import hashlib
import json
import keyword
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Variant class names where the tag alone would collide with a definition name or say too little.
VARIANT_NAMES: dict[tuple[str, str], str] = {
    ("SessionUpdate", "tool_call_update"): "ToolCallUpdated",
    ("DiffChange", "add"): "DiffAdd",
    ("DiffChange", "delete"): "DiffDelete",
    ("DiffChange", "modify"): "DiffModify",
    ("DiffChange", "move"): "DiffMove",
    ("DiffChange", "copy"): "DiffCopy",
    ("CreateElicitationResponse", "decline"): "ElicitationDeclineAction",
    ("CreateElicitationResponse", "cancel"): "ElicitationCancelAction",
    ("SetSessionConfigOptionRequest", "id"): "SetSessionConfigOptionValueIdRequest",
    ("SetSessionConfigOptionRequest", "boolean"): "SetSessionConfigOptionBooleanRequest",
    ("PlanUpdateContent", "removed"): "PlanRemoved",
}

CATCH_ALL_TITLES = {"other", "unknown", "Other"}

# Members written by hand into a generated v2 struct, by class name: conveniences the schema cannot say, kept here
# so that regenerating keeps them. Each is its code (indented for the class body) and the names it uses.
CONVENIENCES: dict[str, tuple[str, set[str]]] = {
    "RequestPermissionRequest": (
        """
    @property
    def tool_call(self) -> ToolCallUpdate | None:
        \"\"\"The tool call the request is about: the subject's when it is a tool call, else None.\"\"\"
        subject = self.subject
        return subject.tool_call if isinstance(subject, ToolCallPermissionSubject) else None

    @property
    def tool_call_id(self) -> ToolCallId | None:
        \"\"\"The id of the tool call the request is about: a tool call subject's, or the one a command subject
        names; None when the subject names none.\"\"\"
        subject = self.subject
        if isinstance(subject, ToolCallPermissionSubject):
            return subject.tool_call.tool_call_id
        if isinstance(subject, CommandPermissionSubject) and isinstance(subject.tool_call_id, str):
            return subject.tool_call_id
        return None
""",
        {"CommandPermissionSubject", "ToolCallId", "ToolCallPermissionSubject", "ToolCallUpdate"},
    ),
}


def snake(name: str) -> str:
    if name == "_meta":
        return "meta"
    out = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name.lstrip("_")).lower()
    out = re.sub(r"[^a-z0-9_]", "_", out)
    if keyword.iskeyword(out) or out in {"none", "true", "false"}:
        out += "_"
    return out


def msgspec_camel(attr: str) -> str:
    """The wire name msgspec's ``rename="camel"`` produces for an attribute."""
    parts = attr.split("_")
    first, rest = parts[0], parts[1:]
    return first + "".join(p.capitalize() for p in rest if p)


def pascal(tag: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[_\-/]", tag) if p)


def ref_name(schema: dict[str, Any]) -> str | None:
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        return str(all_of[0]["$ref"]).rsplit("/", 1)[-1]
    return None


def constrained(expr: str, bounds: dict[str, Any]) -> str:
    """``expr`` with the schema's numeric, length and item-count bounds as a ``msgspec.Meta``."""
    given = {k: v for k, v in bounds.items() if v is not None}
    if not given:
        return expr
    args = ", ".join(f"{k}={v!r}" for k, v in given.items())
    return f"Annotated[{expr}, msgspec.Meta({args})]"


def _optional(expr: str) -> str:
    """``expr`` that may also be omitted (``UNSET``); keeps ``None`` last, as linters expect."""
    if expr.endswith(" | None"):
        return expr[: -len(" | None")] + " | UnsetType | None"
    return expr + " | UnsetType"


def strip_docs(obj: Any) -> Any:
    """Drop annotation-only keys so that two definitions compare by meaning."""
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            if key in ("description", "title", "x-docs-ignore"):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {k: strip_docs(v) for k, v in value.items()}
            else:
                out[key] = strip_docs(value)
        return out
    if isinstance(obj, list):
        return [strip_docs(v) for v in obj]
    return obj


# ---------------------------------------------------------------------------------------------
# Forward compatibility for schemas without catch-alls (v1)

# A generator-private key of the catch-all ``add_catch_alls`` adds to a union whose untagged member is
# the default (``AuthMethod``'s ``agent``): the tag values that name such a member, so that an
# object carrying one of them is not mistaken for an unknown variant.
IMPLIED_TAGS = "x-implied-tags"


def _const_tag(alt: dict[str, Any]) -> tuple[str, str] | None:
    """The one property of ``alt`` holding a string ``const`` (its tag field and value), if any."""
    consts = [(k, v["const"]) for k, v in alt.get("properties", {}).items() if isinstance(v, dict) and "const" in v]
    if len(consts) == 1 and isinstance(consts[0][1], str):
        return consts[0]
    return None


def add_catch_alls(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` where every closed union of ``$defs`` has a catch-all, as v2's have.

    * a union of string ``const`` values (a closed enum) gets an ``other`` string: an open enum;
    * a union tagged by one ``const`` property gets an ``other`` object with that property;
    * a union of tagged members and untagged default members (``AuthMethod``, ``McpServer``) gets
      the ``other`` object just before the first untagged member, with the defaults' titles as
      implied tags (an object carrying none of the known tags is an unknown variant, one without
      the tag property is the default);
    * unions that already have a catch-all, untagged unions and objects with properties whose
      alternatives are only partly tagged (``SetSessionConfigOptionRequest``, whose schema says where
      an unknown ``type`` goes) are left as they are.
    """
    out: dict[str, Any] = json.loads(json.dumps(schema))
    for d in out["$defs"].values():
        key = "anyOf" if "anyOf" in d else "oneOf" if "oneOf" in d else None
        if key is None or d.get("x-docs-ignore"):
            continue
        alts: list[dict[str, Any]] = d[key]
        if any(a.get("title") in CATCH_ALL_TITLES and "const" not in a for a in alts):
            continue
        if all(isinstance(a.get("const"), str) for a in alts):
            d[key] = [*alts, {"title": "other", "type": "string"}]
            continue
        tags = [_const_tag(a) for a in alts]
        tag_fields = {t[0] for t in tags if t is not None}
        if len(tag_fields) != 1:
            continue
        (tag_field,) = tag_fields
        catch_all: dict[str, Any] = {
            "title": "other",
            "type": "object",
            "properties": {tag_field: {"type": "string"}},
            "required": [tag_field],
            "additionalProperties": True,
        }
        untagged = [i for i, t in enumerate(tags) if t is None]
        if not untagged:
            d[key] = [*alts, catch_all]
            continue
        defaults = [alts[i] for i in untagged]
        if "properties" in d or not all(a.get("title") and ref_name(a) and not a.get("properties") for a in defaults):
            continue
        catch_all[IMPLIED_TAGS] = [a["title"] for a in defaults]
        d[key] = [*alts[: untagged[0]], catch_all, *alts[untagged[0] :]]
    return out


def _plain_types(s: dict[str, Any]) -> set[str] | None:
    """The JSON types a property schema accepts, when it is nothing but a ``type`` (else ``None``)."""
    shape = {k for k in s if k not in ("type", "description", "title") and not k.startswith("x-")}
    typ = s.get("type")
    if shape or typ is None:
        return None
    return {typ} if isinstance(typ, str) else set(typ)


def _covers(wide: dict[str, Any], narrow: dict[str, Any]) -> bool:
    """``wide`` plainly accepts every value ``narrow`` does (a string ``const`` counts as a string)."""
    wide_types = _plain_types(wide)
    if wide_types is None:
        return False
    narrow_types = {"string"} if isinstance(narrow.get("const"), str) else _plain_types(narrow)
    return narrow_types is not None and narrow_types <= wide_types


def widen(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """One property schema accepting what either of two differing alternatives' schemas accepts.

    Two string ``const`` values (a partial discriminator) widen to any string; anything else to an
    ``anyOf`` of both. The lenient-decoding marks of both are kept.
    """
    if strip_docs(old) == strip_docs(new):
        return old
    marks = {k: v for s in (old, new) for k, v in s.items() if k.startswith("x-deserialize-")}
    if _covers(old, new):
        return {**old, **marks}
    if _covers(new, old):
        return {**new, **marks}
    if isinstance(old.get("const"), str) and isinstance(new.get("const"), str):
        return {"type": "string", **marks}
    members = [m for s in (old, new) for m in (s["anyOf"] if s.get("x-widened") else [s])]
    return {"anyOf": members, "x-widened": True, **marks}


# ---------------------------------------------------------------------------------------------
# Model


@dataclass
class Field:
    wire: str
    type_expr: str
    required: bool
    flags: list[str] = field(default_factory=list)

    @property
    def attr(self) -> str:
        return snake(self.wire)


@dataclass
class Entity:
    """One generated top-level name with its code and the names it refers to."""

    name: str
    kind: str  # struct, alias, union, alternatives, unknown, enum
    code: str
    deps: set[str]
    registrations: list[str] = field(default_factory=list)
    lenient: dict[str, list[str]] = field(default_factory=dict)
    order: int = 0  # structs: bases first


@dataclass
class Variant:
    tag: str | None  # None for the catch-all
    ref: str | None
    extra: dict[str, Any]
    extra_required: list[str]


class Generator:
    def __init__(self, schema: dict[str, Any], *, open_unions: bool = False) -> None:
        self.open_unions = open_unions
        self.defs: dict[str, Any] = (add_catch_alls(schema) if open_unions else schema)["$defs"]
        self.refcount: dict[str, int] = {}
        self._count_refs(self.defs)
        self.entities: dict[str, Entity] = {}
        self.struct_specs: dict[str, dict[str, Any]] = {}  # class name -> spec
        self.mixins: dict[str, list[str]] = {}  # struct class -> alternatives marker mixins
        self.warnings: list[str] = []

    def _count_refs(self, obj: Any) -> None:
        if isinstance(obj, dict):
            if "$ref" in obj:
                name = str(obj["$ref"]).rsplit("/", 1)[-1]
                self.refcount[name] = self.refcount.get(name, 0) + 1
            for value in obj.values():
                self._count_refs(value)
        elif isinstance(obj, list):
            for value in obj:
                self._count_refs(value)

    # -- classification ---------------------------------------------------------------------

    def tagged_variants(self, alts: list[dict[str, Any]]) -> tuple[str, list[Variant]] | None:
        """If ``alts`` is a union tagged by one const property, return the tag field and members."""
        tag_field: str | None = None
        variants: list[Variant] = []
        for alt in alts:
            props = alt.get("properties", {})
            consts = [k for k, v in props.items() if isinstance(v, dict) and "const" in v]
            if alt.get("title") in CATCH_ALL_TITLES and alt.get("type") == "object":
                extra = {k: v for k, v in props.items() if k != tag_field}
                variants.append(Variant(None, None, extra, []))
                continue
            if len(consts) != 1:
                return None
            key = consts[0]
            if tag_field not in (None, key):
                return None
            tag_field = key
            const = props[key]["const"]
            if not isinstance(const, str):
                return None
            extra = {k: v for k, v in props.items() if k != key}
            required = [r for r in alt.get("required", []) if r != key]
            variants.append(Variant(const, ref_name(alt), extra, required))
        if tag_field is None:
            return None
        for v in variants:
            v.extra.pop(tag_field, None)
        return tag_field, variants

    def unknown_name(self, union: str) -> str:
        """The catch-all class of ``union``: ``Unknown<Union>``, or ``Unrecognized<Union>`` when the
        schema itself defines ``Unknown<Union>`` (v1's ``UnknownStateUpdate`` is the `state: "unknown"` member)."""
        for candidate in (f"Unknown{union}", f"Unrecognized{union}"):
            if candidate not in self.defs:
                return candidate
        raise SystemExit(f"no free name for the catch-all class of {union}")

    def is_union_def(self, name: str) -> bool:
        d = self.defs.get(name, {})
        return "anyOf" in d and "properties" not in d

    def run(self) -> None:
        # Pass 1: decide the struct specs of tagged members (they may rename or tag a definition).
        for name, d in self.defs.items():
            if d.get("x-docs-ignore"):
                continue
            alts = d.get("anyOf") or d.get("oneOf")
            if not alts:
                continue
            tagged = self.tagged_variants(alts)
            if tagged is None:
                continue
            tag_field, variants = tagged
            if "properties" in d and self._merge_object_union(name, tag_field):
                continue
            if self._used_as_nested_member(name):
                continue
            self._plan_tagged_union(name, d, tag_field, variants)
        # Pass 2: every definition.
        for name, d in self.defs.items():
            if name in self.entities or name in self.struct_specs:
                continue
            self._definition(name, d)
        # Pass 3: render planned structs.
        for cls, spec in self.struct_specs.items():
            self._render_struct(cls, spec)

    def _merge_object_union(self, name: str, tag_field: str) -> bool:
        d = self.defs[name]
        return tag_field in d.get("properties", {}) or self._used_as_nested_member(name)

    def _used_as_nested_member(self, name: str) -> bool:
        """True when ``name`` is a member of another tagged union (so it cannot be a union itself)."""
        for other, d in self.defs.items():
            alts = d.get("anyOf") or d.get("oneOf")
            if not alts or other == name:
                continue
            tagged = self.tagged_variants(alts)
            if tagged and any(v.ref == name for v in tagged[1]):
                return True
        return False

    def _plan_tagged_union(self, name: str, d: dict[str, Any], tag_field: str, variants: list[Variant]) -> None:
        base_props = d.get("properties", {})
        base_required = d.get("required", [])
        members: list[str] = []
        has_catch_all = False
        for v in variants:
            if v.tag is None:
                has_catch_all = True
                continue
            bases = ["AcpStruct"]
            fields_from: list[tuple[dict[str, Any], list[str]]] = [(base_props, base_required)]
            if (v.ref is not None and self.is_union_def(v.ref)) or (
                v.ref is not None and (self.defs[v.ref].get("anyOf") or self.defs[v.ref].get("oneOf"))
            ):
                # A nested union: one merged struct named after it.
                cls = v.ref
                fields_from.append(self._merged_fields(v.ref))
            elif v.ref is not None and self.refcount.get(v.ref, 0) == 1 and (name, v.tag) not in VARIANT_NAMES:
                cls = v.ref
                fields_from.append((self.defs[v.ref].get("properties", {}), self.defs[v.ref].get("required", [])))
            elif v.ref is not None and not base_props and not v.extra:
                cls = VARIANT_NAMES.get((name, v.tag), pascal(v.tag))
                bases = [v.ref]
            else:
                cls = VARIANT_NAMES.get((name, v.tag), pascal(v.tag))
                if v.ref is not None:
                    ref_def = self.defs[v.ref]
                    fields_from.append((ref_def.get("properties", {}), ref_def.get("required", [])))
            fields_from.append((v.extra, v.extra_required))
            if cls in self.defs and cls not in (v.ref,):
                raise SystemExit(f"variant class {cls} of {name} collides with a definition; add VARIANT_NAMES")
            if cls in self.struct_specs:
                raise SystemExit(f"variant class {cls} planned twice (in {name})")
            self.struct_specs[cls] = {
                "bases": bases,
                "fields": fields_from,
                "tag_field": tag_field,
                "tag": v.tag,
                "doc": f"`{tag_field}: {v.tag!r}` member of `{name}`.",
                "owner": name,
            }
            members.append(cls)
        unknown = self.unknown_name(name)
        union_members = ", ".join(members)
        code_lines = []
        if has_catch_all:
            self.entities[unknown] = Entity(
                unknown,
                "unknown",
                f"class {unknown}(UnknownVariant):\n"
                f'    """A `{name}` member with a `{tag_field}` this library does not know (kept as raw JSON)."""\n\n'
                f"    __slots__ = ()\n    tag_field: ClassVar[str] = {tag_field!r}\n",
                set(),
            )
            code_lines.append(
                f"if TYPE_CHECKING:\n    {name}: TypeAlias = Union[{union_members}, {unknown}]\n"
                f"else:\n    {name} = Union[{union_members}]\n"
            )
        else:
            code_lines.append(f"{name}: TypeAlias = Union[{union_members}]\n")
        registrations = [f"register_open_union({name}, {tag_field!r}, {unknown})"] if has_catch_all else []
        deps = set(members) | ({unknown} if has_catch_all else set())
        self.entities[name] = Entity(name, "union", "".join(code_lines), deps, registrations)

    def _merged_fields(self, name: str) -> tuple[dict[str, Any], list[str]]:
        """All properties a (possibly nested) union definition can carry, discriminators included."""
        d = self.defs[name]
        props: dict[str, Any] = dict(d.get("properties", {}))
        required: list[str] = list(d.get("required", []))
        alts = d.get("anyOf") or d.get("oneOf") or []
        tagged = self.tagged_variants(alts)
        if tagged is not None:
            tag_field = tagged[0]
            tag_is_required = all(v.tag is not None or True for v in tagged[1]) and tag_field not in props
            if tag_field not in props:
                props[tag_field] = {"type": "string", "x-discriminator": True}
                if tag_is_required and not any(a.get("title") == "none" for a in alts):
                    required.append(tag_field)
        for alt in alts:
            sub_ref = ref_name(alt)
            if sub_ref is not None:
                sub_props, _ = self._merged_fields(sub_ref)
                for k, v in sub_props.items():
                    self._merge_prop(props, k, v)
            for k, v in alt.get("properties", {}).items():
                if tagged is not None and k == tagged[0]:
                    continue
                if self.open_unions and tagged is None and isinstance(v.get("const"), str):
                    # A discriminator only some alternatives carry: open, like the tag of a merged union.
                    v = {"type": "string", **{m: x for m, x in v.items() if m.startswith("x-deserialize-")}}
                self._merge_prop(props, k, v)
        if self.open_unions and alts:
            # A property every alternative requires is required in the merged struct too.
            def alt_required(alt: dict[str, Any]) -> set[str]:
                sub_ref = ref_name(alt)
                return set(alt.get("required", [])) | set(self.defs[sub_ref].get("required", []) if sub_ref else [])

            common = set.intersection(*(alt_required(a) for a in alts))
            skip = {tagged[0]} if tagged is not None else set()
            required += [k for k in props if k in common and k not in required and k not in skip]
        return props, required

    def _merge_prop(self, props: dict[str, Any], key: str, value: dict[str, Any]) -> None:
        """Add an alternative's property to a merged struct's; with open unions, differing ones widen."""
        if key not in props:
            props[key] = value
        elif self.open_unions:
            props[key] = widen(props[key], value)

    # -- definitions ---------------------------------------------------------------------------

    def _definition(self, name: str, d: dict[str, Any]) -> None:
        if d.get("x-docs-ignore"):
            self.entities[name] = Entity(name, "alias", f"{name}: TypeAlias = dict[str, Any]\n", set())
            return
        alts = d.get("anyOf") or d.get("oneOf")
        if alts and "properties" not in d:
            self._union_definition(name, d, alts)
            return
        if alts and "properties" in d:
            props, required = self._merged_fields(name)
            self.struct_specs[name] = {
                "bases": ["AcpStruct"],
                "fields": [(props, required)],
                "tag_field": None,
                "tag": None,
                "doc": self._struct_doc(name, d),
                "owner": None,
            }
            return
        typ = d.get("type")
        if typ == "object" or "properties" in d:
            self.struct_specs[name] = {
                "bases": ["AcpStruct"],
                "fields": [(d.get("properties", {}), d.get("required", []))],
                "tag_field": None,
                "tag": None,
                "doc": self._struct_doc(name, d),
                "owner": None,
            }
            return
        if not d or (typ is None and not alts):
            self.entities[name] = Entity(name, "alias", f"{name}: TypeAlias = Any\n", set())
            return
        expr, deps = self.type_expr(d)
        self.entities[name] = Entity(name, "alias", f"{name}: TypeAlias = {expr}\n", deps)

    def _struct_doc(self, name: str, d: dict[str, Any]) -> str:
        method = d.get("x-method")
        if method:
            side = d.get("x-side")
            if name.endswith("Response"):
                return f"Result of `{method}`."
            if name.endswith("Notification"):
                return f"Params of the `{method}` notification (received by the {side})."
            return f"Params of `{method}` (handled by the {side})."
        return f"Wire object `{name}`."

    def _union_definition(self, name: str, d: dict[str, Any], alts: list[dict[str, Any]]) -> None:
        consts = [a for a in alts if "const" in a]
        catch_all = [a for a in alts if a.get("title") in CATCH_ALL_TITLES and "const" not in a]
        if consts and len(consts) + len(catch_all) == len(alts):
            self._enum(name, consts, bool(catch_all))
            return
        tagged = self.tagged_variants(alts)
        if tagged is not None:
            # Planned as a merged struct (used as a nested member).
            props, required = self._merged_fields(name)
            self.struct_specs[name] = {
                "bases": ["AcpStruct"],
                "fields": [(props, required)],
                "tag_field": None,
                "tag": None,
                "doc": f"Every shape of `{name}` in one struct; `{tagged[0]}` tells which.",
                "owner": None,
            }
            return
        self._alternatives(name, alts)

    def _enum(self, name: str, consts: list[dict[str, Any]], open_: bool) -> None:
        values = [c["const"] for c in consts]
        base = "int" if all(isinstance(v, int) for v in values) else "str"
        const_name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).upper() + "_VALUES"
        if open_:
            code = (
                f"{name}: TypeAlias = {base}\n"
                f'"""Open enum: any {base} is accepted; the known values are in `{const_name}`."""\n'
                f"{const_name}: Final[frozenset[{base}]] = frozenset({{{', '.join(repr(v) for v in values)}}})\n"
            )
        else:
            code = (
                f"{name}: TypeAlias = Literal[{', '.join(repr(v) for v in values)}]\n"
                f"{const_name}: Final[frozenset[{base}]] = frozenset({{{', '.join(repr(v) for v in values)}}})\n"
            )
        self.entities[name] = Entity(name, "enum", code, set())

    def _alternatives(self, name: str, alts: list[dict[str, Any]]) -> None:
        exprs: list[str] = []
        deps: set[str] = set()
        shapes: set[str] = set()
        runtime_alts: list[str] = []
        unknown_code = ""
        if any(a.get("title") in CATCH_ALL_TITLES and a.get("type") != "object" for a in alts):
            # An "anything else" alternative: the whole union is untyped JSON.
            self.entities[name] = Entity(name, "alias", f"{name}: TypeAlias = Any\n", set())
            return
        # Untagged default members (only a catch-all from ``add_catch_alls`` names them): tried first, by tag.
        defaults: dict[str, str] = {}  # title -> tag field
        defaults_first: list[str] = []
        for alt in alts:
            if alt.get("title") in CATCH_ALL_TITLES:
                for title in alt.get(IMPLIED_TAGS, []):
                    defaults[title] = next(iter(alt["properties"]))
        for alt in alts:
            if alt.get("title") in CATCH_ALL_TITLES:
                tag_field = next(iter(alt.get("properties", {})), "type")
                known = [
                    a["properties"][tag_field]["const"]
                    for a in alts
                    if tag_field in a.get("properties", {}) and "const" in a["properties"][tag_field]
                ] + list(alt.get(IMPLIED_TAGS, []))
                unknown = self.unknown_name(name)
                unknown_code = (
                    f"class {unknown}(UnknownVariant, _{name}Alternative):\n"
                    f'    """A `{name}` member with a `{tag_field}` this library does not know."""\n\n'
                    f"    __slots__ = ()\n    tag_field: ClassVar[str] = {tag_field!r}\n"
                )
                exprs.append(unknown)
                runtime_alts.append(f"OtherVariant({tag_field!r}, {unknown}, frozenset({known!r}))")
                shapes.add("object")
                continue
            ref = ref_name(alt)
            props = alt.get("properties", {})
            const_props = [k for k, v in props.items() if isinstance(v, dict) and "const" in v]
            if ref is not None and const_props:
                tag_field = const_props[0]
                tag = props[tag_field]["const"]
                self.struct_specs[ref] = {
                    "bases": ["AcpStruct"],
                    "fields": [(self.defs[ref].get("properties", {}), self.defs[ref].get("required", []))],
                    "tag_field": tag_field,
                    "tag": tag,
                    "doc": f"`{tag_field}: {tag!r}` member of `{name}`.",
                    "owner": name,
                }
            expr, d = self.type_expr(alt)
            exprs.append(expr)
            title = alt.get("title")
            if title in defaults and not const_props:
                defaults_first.append(f"DefaultVariant({defaults[title]!r}, {expr}, frozenset({[title]!r}))")
            else:
                runtime_alts.append(expr)
            deps |= d
            if ref is not None and (self.defs[ref].get("type") == "object" or "properties" in self.defs[ref]):
                shapes.add("object")
                self.mixins.setdefault(ref, []).append(f"_{name}Alternative")
            elif alt.get("type") == "array":
                shapes.add("array")
            else:
                shapes.add("scalar")
        if shapes == {"scalar"}:
            self.entities[name] = Entity(name, "alias", f"{name}: TypeAlias = Union[{', '.join(exprs)}]\n", deps)
            return
        if len(shapes) != 1:
            self.warnings.append(f"{name}: mixed alternatives {shapes}, typed as Any")
            self.entities[name] = Entity(name, "alias", f"{name}: TypeAlias = Any\n", set())
            return
        marker_base = "(AlternativesList)" if shapes == {"array"} else ""
        marker = f"_{name}Alternative"
        marker_code = (
            f"class {marker}{marker_base}:\n"
            f'    """Runtime marker of the untagged union `{name}`."""\n\n'
            f"    __slots__ = ()\n"
        )
        code = f"if TYPE_CHECKING:\n    {name}: TypeAlias = Union[{', '.join(exprs)}]\nelse:\n    {name} = {marker}\n"
        self.entities[marker] = Entity(marker, "marker", marker_code, set())
        if unknown_code:
            unknown = self.unknown_name(name)
            self.entities[unknown] = Entity(unknown, "unknown", unknown_code, {marker})
            deps.add(unknown)
        self.entities[name] = Entity(
            name,
            "alternatives",
            code,
            deps | {marker},
            [f"register_alternatives({marker}, ({', '.join(defaults_first + runtime_alts)},))"],
        )

    # -- types ---------------------------------------------------------------------------------

    def type_expr(self, s: dict[str, Any]) -> tuple[str, set[str]]:
        """Python type expression (as code) for a property schema, and the names it uses."""
        ref = ref_name(s)
        if ref is not None:
            return ref, {ref}
        if "const" in s:
            return f"Literal[{s['const']!r}]", set()
        alts = s.get("anyOf") or s.get("oneOf")
        if alts:
            parts: list[str] = []
            deps: set[str] = set()
            for alt in alts:
                expr, d = self.type_expr(alt)
                if expr not in parts:
                    parts.append(expr)
                deps |= d
            if "Any" in parts:
                return "Any", deps
            return " | ".join(parts), deps
        typ = s.get("type")
        if isinstance(typ, list):
            non_null = [t for t in typ if t != "null"]
            inner, deps = self.type_expr({**s, "type": non_null[0] if len(non_null) == 1 else non_null})
            return (f"{inner} | None" if "null" in typ else inner), deps  # None last: see _optional
        if typ == "string":
            return constrained("str", {"min_length": s.get("minLength"), "max_length": s.get("maxLength")}), set()
        if typ in ("integer", "number"):
            bounds = {"ge": s.get("minimum"), "le": s.get("maximum")}
            return constrained("int" if typ == "integer" else "float", bounds), set()
        if typ == "boolean":
            return "bool", set()
        if typ == "null":
            return "None", set()
        if typ == "array":
            item, deps = self.type_expr(s.get("items", {}))
            return constrained(f"list[{item}]", {"min_length": s.get("minItems")}), deps
        if typ == "object":
            extra = s.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                value, deps = self.type_expr(extra)
                return f"dict[str, {value}]", deps
            return "dict[str, Any]", set()
        return "Any", set()

    # -- structs -------------------------------------------------------------------------------

    def _render_struct(self, cls: str, spec: dict[str, Any]) -> None:
        merged: dict[str, Field] = {}
        for props, required in spec["fields"]:
            for wire, prop in props.items():
                if wire == spec["tag_field"]:
                    continue
                expr, _ = self.type_expr(prop)
                flags = []
                if prop.get("x-deserialize-default-on-error"):
                    flags.append("DEFAULT_ON_ERROR")
                if prop.get("x-deserialize-default-on-null"):
                    flags.append("DEFAULT_ON_NULL")
                if prop.get("x-deserialize-skip-invalid-items"):
                    flags.append("SKIP_INVALID_ITEMS")
                new = Field(wire, expr, wire in required, flags)
                if wire in merged:
                    old = merged[wire]
                    if old.type_expr != new.type_expr:
                        old.type_expr = f"{old.type_expr} | {new.type_expr}"
                    old.required = old.required or new.required
                    old.flags = sorted(set(old.flags) | set(flags))
                else:
                    merged[wire] = new
        bases = list(spec["bases"])
        if len(bases) == 1 and bases[0] != "AcpStruct" and bases[0] in self.struct_specs:
            # Subclass of an existing struct: its fields are inherited.
            parent_fields = {w for props, _ in self.struct_specs[bases[0]]["fields"] for w in props}
            merged = {w: f for w, f in merged.items() if w not in parent_fields}
        bases += self.mixins.get(cls, [])
        kw = ""
        if spec["tag"] is not None:
            kw = f", tag_field={spec['tag_field']!r}, tag={spec['tag']!r}"
        lines = [f"class {cls}({', '.join(bases)}{kw}):", f'    """{spec["doc"]}"""', ""]
        deps: set[str] = set(b for b in bases if b != "AcpStruct")
        lenient: dict[str, list[str]] = {}
        ordered = [f for f in merged.values() if f.required] + [f for f in merged.values() if not f.required]
        for f in ordered:
            _, d = self.type_expr(self._find_prop(spec, f.wire))
            deps |= d
            annotation = f.type_expr if f.required else _optional(f.type_expr)
            name_arg = "" if msgspec_camel(f.attr) == f.wire else f'name="{f.wire}"'
            if f.required:
                default = f" = msgspec.field({name_arg})" if name_arg else ""
            else:
                default = f" = msgspec.field(default=UNSET, {name_arg})" if name_arg else " = UNSET"
            lines.append(f"    {f.attr}: {annotation}{default}")
            if f.flags:
                lenient[f.attr] = f.flags
        if not ordered:
            lines.pop()  # the blank line after the docstring
        order = 1 if bases[0] not in ("AcpStruct",) else 0
        self.entities[cls] = Entity(cls, "struct", "\n".join(lines) + "\n", deps, [], lenient, order)

    def _find_prop(self, spec: dict[str, Any], wire: str) -> dict[str, Any]:
        for props, _ in spec["fields"]:
            if wire in props:
                return dict(props[wire])
        return {}


# ---------------------------------------------------------------------------------------------
# Module rendering


HEADER = '''"""{title}

Generated by ``schema/generate.py`` from the official ACP v{version} JSON schema; do not edit.
Source: {sources}{note}
"""

# ruff: noqa: UP007

from __future__ import annotations

{imports}
if TYPE_CHECKING:
    from typing import TypeAlias
else:
    TypeAlias = object

'''

OPEN_UNIONS_NOTE = """
Opened (``--open-unions``): every tagged union has an ``Unknown…`` catch-all and every string
enum is open, although the schema closes them (see docs/schema.md)."""

RUNTIME_MODULE = Path(__file__).resolve().parent.parent / "acp_session" / "_schema_runtime.py"


def runtime_names() -> list[str]:
    """The public names of the runtime support module (its ``__all__``, read without importing it)."""
    for node in ast.parse(RUNTIME_MODULE.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise SystemExit(f"{RUNTIME_MODULE} has no __all__")


def header_imports(body: str) -> str:
    """Import lines for exactly the names ``body`` uses."""

    def used(name: str) -> bool:
        return re.search(rf"\b{name}\b", body) is not None

    typing_names = [
        n
        for n in ("TYPE_CHECKING", "Annotated", "Any", "ClassVar", "Final", "Literal", "Union")
        if used(n) or n == "TYPE_CHECKING"
    ]
    lines = [f"from typing import {', '.join(typing_names)}", ""]
    if used("msgspec"):
        lines.append("import msgspec")
    msgspec_names = [n for n in ("UNSET", "UnsetType") if used(n)]
    if msgspec_names:
        lines.append(f"from msgspec import {', '.join(msgspec_names)}")
    lines.append("")
    runtime = [n for n in runtime_names() if used(n)]
    lines.append("from acp_session._schema_runtime import (")
    lines += [f"    {n}," for n in runtime]
    lines.append(")")
    return "\n".join(lines) + "\n"


def method_tables(defs: dict[str, Any], names: set[str]) -> str:
    requests: dict[str, dict[str, str]] = {}
    notifications: list[tuple[str, str, str]] = []
    for name, d in defs.items():
        method, side = d.get("x-method"), d.get("x-side")
        if not method or name not in names:
            continue
        if name.endswith("Notification"):
            notifications.append((method, name, side))
        elif name.endswith("Response"):
            requests.setdefault(method, {})["result"] = name
            requests[method]["side"] = side
        else:
            requests.setdefault(method, {})["params"] = name
            requests[method]["side"] = side
    lines = []
    request_sides = ["agent", "client", *sorted({spec["side"] for spec in requests.values()} - {"agent", "client"})]
    for side in request_sides:
        lines.append(f"{side.upper()}_METHODS: Final[dict[str, MethodSpec]] = {{")
        for method, spec in sorted(requests.items()):
            if spec["side"] == side:
                lines.append(f"    {method!r}: MethodSpec({method!r}, {spec['params']}, {spec['result']}, {side!r}),")
        lines.append("}")
    notification_sides = ["agent", "client", "protocol"]
    notification_sides += sorted({side for _, _, side in notifications} - set(notification_sides))
    for side in notification_sides:
        lines.append(f"{side.upper()}_NOTIFICATIONS: Final[dict[str, NotificationSpec]] = {{")
        for method, name, s in sorted(notifications):
            if s == side:
                lines.append(f"    {method!r}: NotificationSpec({method!r}, {name}, {side!r}),")
        lines.append("}")
    return "\n".join(lines) + "\n"


def isort_key(name: str) -> tuple[int, str, str]:
    """The order ruff's isort gives imported names: constants, then classes, then the rest, ignoring case."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name.lower(), name


def render_module(
    gen: Generator,
    title: str,
    sources: str,
    only: set[str] | None,
    imports_from: str | None,
    version: int = 2,
    extends: set[str] | None = None,
) -> str:
    """``extends``: structs of the stable module that a same-named struct here subclasses, so an unstable value
    is also an instance of the stable type (``isinstance`` checks against the stable types keep holding)."""
    entities = gen.entities
    emit = [e for e in entities.values() if only is None or e.name in only]
    if extends and imports_from:
        emit = [_extending(e) if e.kind == "struct" and e.name in extends else e for e in emit]
    emitted = {x.name for x in emit}
    wanted = {dep for e in emit for dep in e.deps} | {n for n, d in gen.defs.items() if d.get("x-method")}
    imported = []
    if only is not None:
        imported = sorted((n for n in wanted if n not in emitted and n in entities), key=isort_key)
    out: list[str] = []
    local_imports = ""
    if imported and imports_from:
        local_imports = f"from {imports_from} import (\n" + "".join(f"    {n},\n" for n in imported) + ")\n"
    if extends and imports_from and any(e.code.startswith(f"class {e.name}(_stable.") for e in emit):
        package, _, module = imports_from.rpartition(".")
        local_imports = f"from {package} import {module} as _stable\n" + local_imports

    def by_kind(kind: str) -> list[Entity]:
        return [e for e in emit if e.kind == kind]

    if version == 2 and imports_from is None:  # the stable module: the hand-written conveniences
        emit = [_with_convenience(e) if e.name in CONVENIENCES else e for e in emit]
    for e in by_kind("marker"):
        out.append(e.code + "\n\n")
    for e in by_kind("unknown"):
        out.append(e.code + "\n\n")
    structs = sorted_structs(by_kind("struct"))
    for e in structs:
        out.append(e.code + "\n\n")
    for e in by_kind("enum") + by_kind("alias"):
        out.append(e.code + "\n")
    out.append("\n")
    for e in sorted_aliases(by_kind("union") + by_kind("alternatives")):
        out.append(e.code + "\n")
    regs = [r for e in emit for r in e.registrations]
    out.append("\n" + "\n".join(regs) + "\n")
    lenient_rows = []
    for e in structs:
        if e.lenient:
            cells = ", ".join(f"{k!r}: {' | '.join(v)}" for k, v in e.lenient.items())
            lenient_rows.append(f"    {e.name}: {{{cells}}},")
    out.append("register_lenient({\n" + "\n".join(lenient_rows) + "\n})\n\n")
    names = set(entities)
    out.append(method_tables(gen.defs, names))
    body = "".join(out)
    imports = header_imports(body) + local_imports
    note = OPEN_UNIONS_NOTE if gen.open_unions else ""
    return HEADER.format(title=title, version=version, sources=sources, note=note, imports=imports) + body


def _with_convenience(e: Entity) -> Entity:
    """A struct entity with its hand-written members (``CONVENIENCES``) after its fields."""
    code, names = CONVENIENCES[e.name]
    return dataclasses.replace(e, code=e.code + code, deps=e.deps | names)


def _extending(e: Entity) -> Entity:
    """A struct entity rewritten to subclass the stable struct of the same name (its fields are redeclared, so
    the unstable types and leniency apply)."""
    head, rest = e.code.split("\n", 1)
    head = head.replace(f"class {e.name}(AcpStruct", f"class {e.name}(_stable.{e.name}", 1)
    return dataclasses.replace(e, code=f"{head}\n{rest}")


def dependency_order(entities: list[Entity], needs: Callable[[Entity], Iterable[str]]) -> list[Entity]:
    """``entities`` with everything an entity ``needs`` (among them) placed before it."""
    by_name = {e.name: e for e in entities}
    done: list[Entity] = []
    seen: set[str] = set()

    def visit(e: Entity) -> None:
        if e.name in seen:
            return
        seen.add(e.name)
        for name in needs(e):
            if name in by_name:
                visit(by_name[name])
        done.append(e)

    for e in entities:
        visit(e)
    return done


def sorted_structs(structs: list[Entity]) -> list[Entity]:
    """Structs by name, each base class before its subclasses."""

    def bases(e: Entity) -> list[str]:
        base_line = e.code.split("\n", 1)[0]
        return re.findall(r"\b([A-Z]\w*)\b", base_line.split("(", 1)[1])

    return dependency_order(sorted(structs, key=lambda x: x.name), bases)


def sorted_aliases(aliases: list[Entity]) -> list[Entity]:
    """Module-level aliases, each after the aliases its value evaluates."""
    return dependency_order(aliases, lambda e: sorted(e.deps))


def changed_names(stable: Generator, unstable: Generator) -> set[str]:
    """Unstable entities whose code differs from the stable one, or that use such an entity."""
    changed = {
        n
        for n, e in unstable.entities.items()
        if n not in stable.entities or stable.entities[n].code != e.code or stable.entities[n].lenient != e.lenient
    }
    while True:
        more = {n for n, e in unstable.entities.items() if n not in changed and e.deps & changed}
        if not more:
            return changed
        changed |= more


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def package_for(version: int) -> str:
    """The Python package the types of a protocol version live in."""
    return "acp_session.schema" if version == 2 else f"acp_session.schema.v{version}"


def default_out(version: int) -> Path:
    return Path(__file__).resolve().parent.parent.joinpath(*package_for(version).split("."))


def infer_version(schema: dict[str, Any]) -> int:
    """The protocol version a schema describes, from its documentation links (``.../protocol/vN/...``)."""
    found = {int(v) for v in re.findall(r"/protocol/v(\d+)/", json.dumps(schema))}
    if len(found) != 1:
        named = sorted(found)
        raise SystemExit(f"cannot tell the protocol version from the schema (its links name {named}); give --version")
    return found.pop()


def generate(schema_dir: Path, version: int | None = None, open_unions: bool | None = None) -> dict[str, str]:
    """The generated files (name → text) for the schema in ``schema_dir``.

    ``version`` defaults to :func:`infer_version`; ``open_unions`` defaults to on for every version but 2.
    """
    stable_path = schema_dir / "schema.json"
    unstable_path = schema_dir / "schema.unstable.json"
    stable_schema = json.loads(stable_path.read_text())
    if version is None:
        version = infer_version(stable_schema)
    if open_unions is None:
        open_unions = version != 2
    package = package_for(version)
    stable = Generator(stable_schema, open_unions=open_unions)
    stable.run()
    stable_src = f"schema.json sha256 {sha256(stable_path)}"
    files = {
        "types.py": render_module(
            stable, f"ACP v{version} wire types (stable schema).", stable_src, None, None, version
        ),
    }
    if unstable_path.exists():
        unstable = Generator(json.loads(unstable_path.read_text()), open_unions=open_unions)
        unstable.run()
        only = changed_names(stable, unstable)
        unstable_src = f"schema.unstable.json sha256 {sha256(unstable_path)}"
        stable_structs = {n for n, e in stable.entities.items() if e.kind == "struct"}
        files["unstable.py"] = render_module(
            unstable,
            f"ACP v{version} wire types that exist only, or differ, in the unstable schema (opt-in).",
            unstable_src,
            only,
            f"{package}.types",
            version,
            extends=stable_structs,
        )
    stable_hash = sha256(stable_path)
    unstable_hash = sha256(unstable_path) if unstable_path.exists() else ""
    files["__init__.py"] = INIT.format(version=version, package=package, stable=stable_hash, unstable=unstable_hash)
    for g in [stable]:
        for w in g.warnings:
            print(f"warning: {w}", file=sys.stderr)
    return files


INIT = '''"""Generated ACP v{version} wire types (see ``schema/generate.py``); stable types are re-exported here.

Opt into unstable-only types and methods with ``from {package} import unstable``.
"""

from {package}.types import *  # noqa: F403
from {package}.types import AGENT_METHODS, CLIENT_METHODS  # noqa: F401

SCHEMA_SHA256 = "{stable}"
UNSTABLE_SCHEMA_SHA256 = "{unstable}"
'''


def write(files: dict[str, str], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out / name).write_text(text)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("schema_dir", type=Path, help="folder with schema.json (and schema.unstable.json)")
    parser.add_argument(
        "--version",
        type=int,
        help="protocol version of the schema (default: inferred from the schema's documentation links)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="output folder (default: acp_session/schema for v2, acp_session/schema/vN for version N)",
    )
    parser.add_argument(
        "--open-unions",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="give closed tagged unions and string enums a catch-all (default: on for every version but 2)",
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    version = args.version
    if version is None:
        version = infer_version(json.loads((args.schema_dir / "schema.json").read_text()))
    write(generate(args.schema_dir, version, args.open_unions), args.out or default_out(version))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
