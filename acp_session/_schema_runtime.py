"""Runtime support for the generated ACP types in :mod:`acp_session.schema`.

The generated structs are decoded by msgspec in one pass when a message holds only
known variants and well-formed fields. Only when that fails does ``lenient_convert``
run: it rebuilds the message from plain JSON values, keeping unknown tagged-union
variants as ``UnknownVariant`` dicts and applying the schema's lenient-decoding
marks (``x-deserialize-default-on-error``, ``-default-on-null``, ``-skip-invalid-items``).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Final, Union

import msgspec

__all__ = [
    "DEFAULT_ON_ERROR",
    "DEFAULT_ON_NULL",
    "SKIP_INVALID_ITEMS",
    "AcpStruct",
    "AlternativesList",
    "DefaultVariant",
    "MethodSpec",
    "NotificationSpec",
    "OtherVariant",
    "UnknownVariant",
    "alternatives_dec_hook",
    "is_extension_value",
    "lenient_convert",
    "register_alternatives",
    "register_lenient",
    "register_open_union",
]

DEFAULT_ON_ERROR: Final = 1
DEFAULT_ON_NULL: Final = 2
SKIP_INVALID_ITEMS: Final = 4


class AcpStruct(msgspec.Struct, kw_only=True, rename="camel", gc=False, repr_omit_defaults=True):
    """Base of every generated wire struct: camelCase on the wire, keyword-only construction.

    Optional fields default to ``msgspec.UNSET`` so that omitted, ``null`` and a value stay
    three distinct states and re-encoding reproduces what was received.
    """


class UnknownVariant(dict[str, Any]):
    """A tagged-union member whose tag this library does not know.

    It *is* the raw JSON object (a ``dict``), so it re-encodes byte-for-byte equivalent.
    A tag starting with ``_`` is an extension; any other unknown tag is a future ACP variant.
    """

    __slots__ = ()
    tag_field: ClassVar[str] = "type"

    @property
    def tag(self) -> str:
        value = self.get(self.tag_field)
        return value if isinstance(value, str) else ""

    @property
    def is_extension(self) -> bool:
        return is_extension_value(self.tag)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict.__repr__(self)})"


class AlternativesList(list[Any]):
    """Runtime form of a union of list shapes (e.g. grouped or ungrouped select options)."""

    __slots__ = ()


def is_extension_value(value: str) -> bool:
    """True for ``_``-prefixed enum values and tags, which the schema reserves for extensions."""
    return value.startswith("_")


@dataclass(frozen=True, slots=True)
class OtherVariant:
    """The catch-all member of an untagged union: an object whose tag is none of the known ones."""

    tag_field: str
    unknown: type[UnknownVariant]
    known: frozenset[str]

    def accept(self, obj: Any) -> UnknownVariant | None:
        if isinstance(obj, dict):
            tag = obj.get(self.tag_field)
            if isinstance(tag, str) and tag not in self.known:
                return self.unknown(obj)
        return None


@dataclass(frozen=True, slots=True)
class DefaultVariant:
    """The untagged member of a union that an object without the tag field is (v1's ``AuthMethod``: ``agent``).

    Listed first among the alternatives: an object that has no ``tag_field``, or whose tag is one of ``tags``
    (the member's own name), is decoded as ``member`` or fails; any other object is left to the tagged members
    and the catch-all.
    """

    tag_field: str
    member: Any
    tags: frozenset[str]

    def matches(self, obj: Any) -> bool:
        return isinstance(obj, dict) and (self.tag_field not in obj or obj[self.tag_field] in self.tags)


@dataclass(frozen=True, slots=True)
class MethodSpec:
    """One request method: its params and result types and which side handles it."""

    method: str
    params: Any
    result: Any
    handled_by: str  # "agent" or "client"


@dataclass(frozen=True, slots=True)
class NotificationSpec:
    """One notification method: its params type and which side receives it."""

    method: str
    params: Any
    handled_by: str  # "agent", "client" or "protocol" (both)


# ---------------------------------------------------------------------------------------------
# Registries filled by the generated modules at import time.

_LENIENT: dict[type, Mapping[str, int]] = {}
_OPEN_UNIONS: dict[Any, tuple[str, type[UnknownVariant]]] = {}
_ALTERNATIVES: dict[type, tuple[Any, ...]] = {}


def register_lenient(table: Mapping[type, Mapping[str, int]]) -> None:
    """Record which struct fields carry lenient-decoding marks (by Python attribute name)."""
    _LENIENT.update(table)


def register_open_union(union: Any, tag_field: str, unknown: type[UnknownVariant]) -> None:
    """Record the class that keeps unknown members of a tagged union."""
    _OPEN_UNIONS[union] = (tag_field, unknown)


def register_alternatives(marker: type, alternatives: tuple[Any, ...]) -> None:
    """Record an untagged union: decoded by trying each alternative in schema order."""
    _ALTERNATIVES[marker] = alternatives


def alternatives_dec_hook(tp: Any, obj: Any) -> Any:
    """msgspec ``dec_hook`` resolving untagged unions (the first alternative that fits wins)."""
    alternatives = _ALTERNATIVES.get(tp)
    if alternatives is None:
        raise NotImplementedError(f"no decoder for {tp!r}")
    errors: list[str] = []
    for alternative in alternatives:
        if isinstance(alternative, OtherVariant):
            unknown = alternative.accept(obj)
            if unknown is not None:
                return unknown
            continue
        if isinstance(alternative, DefaultVariant):
            if alternative.matches(obj):
                # It is this member (tagged members would take an untagged object too): no other try.
                return lenient_convert(obj, alternative.member)
            continue
        try:
            value = lenient_convert(obj, alternative)
        except msgspec.ValidationError as exc:
            errors.append(str(exc))
            continue
        if isinstance(tp, type) and issubclass(tp, list) and not isinstance(value, tp):
            return tp(value)
        return value
    raise msgspec.ValidationError(f"matches no alternative of {tp.__name__}: {'; '.join(errors)}")


# ---------------------------------------------------------------------------------------------
# The slow path.


class _PathError(msgspec.ValidationError):
    """A validation error that already carries its JSON path."""


def _fail(message: str, path: str) -> _PathError:
    return _PathError(f"{message} - at `{path}`")


def _with_path(exc: msgspec.ValidationError, path: str) -> msgspec.ValidationError:
    if isinstance(exc, _PathError):
        return exc
    text = str(exc)
    if " - at `$" in text:
        message, _, inner = text.partition(" - at `$")
        return _fail(message, path + inner.rstrip("`"))
    return _fail(text, path)


def lenient_convert(obj: Any, tp: Any, path: str = "$") -> Any:
    """Convert plain JSON values into ``tp``, keeping unknown variants and honouring lenient marks.

    Raises ``msgspec.ValidationError`` (with a ``$.path``) when the value does not fit even then.
    """
    try:
        return msgspec.convert(obj, tp, dec_hook=alternatives_dec_hook)
    except msgspec.ValidationError as exc:
        first_error = exc
    rebuilt = _rebuild(obj, tp, path)
    if rebuilt is _NO_REBUILD:
        raise _with_path(first_error, path)
    return rebuilt


_NO_REBUILD: Final = object()


def _rebuild(obj: Any, tp: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    if origin is Annotated:
        # Rebuild the inner type, then hold the result to the same bounds the fast pass enforces.
        inner, *extras = typing.get_args(tp)
        value = lenient_convert(obj, inner, path)
        _check_bounds(value, extras, path)
        return value
    if origin is Union or origin is types.UnionType or tp in _OPEN_UNIONS:
        # (A one-member open union is the member class itself, so the registry is checked too.)
        return _rebuild_union(obj, tp, path)
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return _rebuild_struct(obj, tp, path)
    if origin is list and isinstance(obj, list):
        (item_type,) = typing.get_args(tp)
        return [lenient_convert(item, item_type, f"{path}[{i}]") for i, item in enumerate(obj)]
    if origin is dict and isinstance(obj, dict):
        _key_type, value_type = typing.get_args(tp)
        return {k: lenient_convert(v, value_type, f"{path}.{k}") for k, v in obj.items()}
    return _NO_REBUILD


def _rebuild_union(obj: Any, tp: Any, path: str) -> Any:
    members = typing.get_args(tp) or (tp,)
    if obj is None and type(None) in members:
        return None
    open_union = _OPEN_UNIONS.get(tp)
    structs = [m for m in members if isinstance(m, type) and issubclass(m, msgspec.Struct)]
    if open_union is None:
        # An optional wrapper (``X | None | UnsetType``): look through it.
        real = [m for m in members if m is not type(None) and m is not msgspec.UnsetType]
        if len(real) == 1:
            return lenient_convert(obj, real[0], path)
        for member in real:
            nested = _OPEN_UNIONS.get(member)
            if nested is not None or typing.get_origin(member) in (Union, types.UnionType):
                return lenient_convert(obj, member, path)
        if len(structs) != len(real):
            return _NO_REBUILD
        open_union = _OPEN_UNIONS.get(Union[tuple(structs)])  # noqa: UP007
        if open_union is None:
            return _NO_REBUILD
    tag_field, unknown = open_union
    if not isinstance(obj, dict):
        raise _fail(f"Expected `object`, got `{type(obj).__name__}`", path)
    tag = obj.get(tag_field)
    if not isinstance(tag, str):
        raise _fail(f"Object missing required field `{tag_field}`", path)
    for member in structs:
        if member.__struct_config__.tag == tag:
            return _rebuild_struct(obj, member, path)
    return unknown(obj)


def _rebuild_struct(obj: Any, tp: type[msgspec.Struct], path: str) -> Any:
    if not isinstance(obj, dict):
        raise _fail(f"Expected `object`, got `{type(obj).__name__}`", path)
    config = tp.__struct_config__
    if config.tag_field is not None and obj.get(config.tag_field) != config.tag:
        raise _fail(f"Invalid value {obj.get(config.tag_field)!r}", f"{path}.{config.tag_field}")
    marks = _lenient_marks(tp)
    hints = _struct_hints(tp)
    values: dict[str, Any] = {}
    for field in msgspec.structs.fields(tp):
        field_path = f"{path}.{field.encode_name}"
        if field.encode_name not in obj:
            if field.required:
                raise _fail(f"Object missing required field `{field.encode_name}`", path)
            continue
        raw = obj[field.encode_name]
        mark = marks.get(field.name, 0)
        if raw is None and mark & DEFAULT_ON_NULL:
            continue
        field_type = hints[field.name]
        try:
            if mark & SKIP_INVALID_ITEMS and isinstance(raw, list):
                values[field.name] = _convert_items_skipping_invalid(raw, field_type, field_path)
            else:
                values[field.name] = lenient_convert(raw, field_type, field_path)
        except msgspec.ValidationError:
            if mark & DEFAULT_ON_ERROR and not field.required:
                continue
            raise
    return tp(**values)


def _convert_items_skipping_invalid(raw: list[Any], field_type: Any, path: str) -> list[Any]:
    list_type, bounds = _list_type(field_type)
    if list_type is None:
        return typing.cast(list[Any], lenient_convert(raw, field_type, path))
    (item_type,) = typing.get_args(list_type)
    kept: list[Any] = []
    for index, item in enumerate(raw):
        try:
            kept.append(lenient_convert(item, item_type, f"{path}[{index}]"))
        except msgspec.ValidationError:
            continue
    _check_bounds(kept, bounds, path)
    return kept


def _list_type(field_type: Any) -> tuple[Any, list[Any]]:
    """The ``list[...]`` member of a field's type and the bounds annotated on it."""
    candidates = (
        typing.get_args(field_type) if typing.get_origin(field_type) in (Union, types.UnionType) else (field_type,)
    )
    for candidate in candidates:
        bounds: list[Any] = []
        if typing.get_origin(candidate) is Annotated:
            candidate, *bounds = typing.get_args(candidate)
        if typing.get_origin(candidate) is list:
            return candidate, bounds
    return None, []


def _check_bounds(value: Any, extras: list[Any], path: str) -> None:
    """Apply the ``msgspec.Meta`` bounds the generator emits (lengths and numeric limits)."""
    for meta in extras:
        if not isinstance(meta, msgspec.Meta):
            continue
        if meta.min_length is not None and len(value) < meta.min_length:
            raise _fail(f"Expected length >= {meta.min_length}", path)
        if meta.max_length is not None and len(value) > meta.max_length:
            raise _fail(f"Expected length <= {meta.max_length}", path)
        if meta.ge is not None and value < meta.ge:
            raise _fail(f"Expected `{type(value).__name__}` >= {meta.ge}", path)
        if meta.le is not None and value > meta.le:
            raise _fail(f"Expected `{type(value).__name__}` <= {meta.le}", path)


def _lenient_marks(tp: type) -> Mapping[str, int]:
    marks: dict[str, int] = {}
    for klass in reversed(tp.__mro__):
        marks.update(_LENIENT.get(klass, {}))
    return marks


_HINTS: dict[type, dict[str, Any]] = {}


def _struct_hints(tp: type) -> dict[str, Any]:
    hints = _HINTS.get(tp)
    if hints is None:
        hints = typing.get_type_hints(tp, include_extras=True)
        _HINTS[tp] = hints
    return hints


DecodeHook = Callable[[Any, Any], Any]
