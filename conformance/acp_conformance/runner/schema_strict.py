"""Whether a value matches a type of the generated schema strictly (``schema_problem``).

The library decodes what agents send leniently, as the schema's ``x-deserialize-default-on-error`` marks allow a
reader to: a field of the wrong type is read as absent, an invalid item of some lists is skipped. A check that a
message *matches the schema* (the official kit's ACP-SCHEMA-001, ACP-SESSION-001, ...) must not be that lenient,
so this walks the same generated types without the leniency: a wrong value anywhere is a problem. What the schema
itself allows stays allowed: an unknown member of an open union (its ``other`` branch), ``null`` where omitted and
``null`` mean the same, unknown keys.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Union

import msgspec

from acp_session._schema_runtime import (
    _ALTERNATIVES,
    _OPEN_UNIONS,
    DEFAULT_ON_NULL,
    DefaultVariant,
    OtherVariant,
    _lenient_marks,
    _struct_hints,
)

__all__ = ["schema_problem"]


class _Mismatch(Exception):
    pass


def schema_problem(value: Any, tp: Any) -> str | None:
    """Why ``value`` (plain JSON) does not match ``tp`` strictly, with the JSON path; None when it does."""
    try:
        _check(value, tp, "$")
    except _Mismatch as exc:
        return str(exc)
    return None


def _fail(message: str, path: str) -> _Mismatch:
    return _Mismatch(f"{message} at {path}")


def _check(obj: Any, tp: Any, path: str) -> None:
    if tp is Any:
        return
    origin = typing.get_origin(tp)
    if origin is Annotated:
        inner, *extras = typing.get_args(tp)
        _check(obj, inner, path)
        _bounds(obj, extras, path)
    elif tp in _OPEN_UNIONS or origin is Union or origin is types.UnionType:
        _union(obj, tp, path)
    elif isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        _struct(obj, tp, path)
    elif tp in _ALTERNATIVES:
        _alternatives(obj, tp, path)
    elif origin is list:
        if not isinstance(obj, list):
            raise _fail(f"expected an array, got {_kind(obj)}", path)
        (item,) = typing.get_args(tp)
        for index, value in enumerate(obj):
            _check(value, item, f"{path}[{index}]")
    elif origin is dict:
        if not isinstance(obj, dict):
            raise _fail(f"expected an object, got {_kind(obj)}", path)
        _, item = typing.get_args(tp)
        for key, value in obj.items():
            _check(value, item, f"{path}.{key}")
    else:
        try:
            msgspec.convert(obj, tp, strict=True)
        except (msgspec.ValidationError, TypeError) as exc:
            raise _fail(str(exc).split(" - at ")[0], path) from None


def _kind(obj: Any) -> str:
    return "null" if obj is None else type(obj).__name__


def _union(obj: Any, tp: Any, path: str) -> None:
    members = typing.get_args(tp) or (tp,)
    if obj is None and type(None) in members:
        return
    open_union = _OPEN_UNIONS.get(tp)
    if open_union is None:
        real = [m for m in members if m is not type(None) and m is not msgspec.UnsetType]
        if len(real) == 1:
            _check(obj, real[0], path)
            return
        structs = [m for m in real if isinstance(m, type) and issubclass(m, msgspec.Struct)]
        open_union = _OPEN_UNIONS.get(Union[tuple(structs)]) if structs and len(structs) == len(real) else None  # noqa: UP007
        if open_union is None:
            errors: list[str] = []
            for member in real:
                try:
                    _check(obj, member, path)
                    return
                except _Mismatch as exc:
                    errors.append(str(exc))
            raise _Mismatch("; ".join(errors) or f"no member fits at {path}")
        members = tuple(structs)
    tag_field, _unknown = open_union
    if not isinstance(obj, dict):
        raise _fail(f"expected an object, got {_kind(obj)}", path)
    tag = obj.get(tag_field)
    if not isinstance(tag, str):
        raise _fail(f"missing the string field {tag_field!r}", path)
    for member in members:
        if isinstance(member, type) and issubclass(member, msgspec.Struct) and member.__struct_config__.tag == tag:
            _struct(obj, member, path)
            return
    # an unknown member: the schema's "other" branch takes it


def _struct(obj: Any, tp: type[msgspec.Struct], path: str) -> None:
    if not isinstance(obj, dict):
        raise _fail(f"expected an object, got {_kind(obj)}", path)
    config = tp.__struct_config__
    if config.tag_field is not None and obj.get(config.tag_field) != config.tag:
        raise _fail(f"{config.tag_field} is {obj.get(config.tag_field)!r}, not {config.tag!r}", path)
    marks = _lenient_marks(tp)
    hints = _struct_hints(tp)
    for field in msgspec.structs.fields(tp):
        if field.encode_name not in obj:
            if field.required:
                raise _fail(f"missing the required field {field.encode_name!r}", path)
            continue
        raw = obj[field.encode_name]
        if raw is None and marks.get(field.name, 0) & DEFAULT_ON_NULL:
            continue
        _check(raw, hints[field.name], f"{path}.{field.encode_name}")


def _alternatives(obj: Any, tp: Any, path: str) -> None:
    errors: list[str] = []
    for alternative in _ALTERNATIVES[tp]:
        if isinstance(alternative, OtherVariant):
            if alternative.accept(obj) is not None:
                return
            continue
        if isinstance(alternative, DefaultVariant):
            if alternative.matches(obj):
                _check(obj, alternative.member, path)
                return
            continue
        try:
            _check(obj, alternative, path)
            return
        except _Mismatch as exc:
            errors.append(str(exc))
    raise _Mismatch("; ".join(errors) or f"matches no alternative at {path}")


def _bounds(obj: Any, extras: list[Any], path: str) -> None:
    for meta in extras:
        if not isinstance(meta, msgspec.Meta):
            continue
        size = len(obj) if isinstance(obj, (list, str, dict)) else None
        if meta.min_length is not None and size is not None and size < meta.min_length:
            raise _fail(f"expected at least {meta.min_length} item(s)", path)
        if meta.max_length is not None and size is not None and size > meta.max_length:
            raise _fail(f"expected at most {meta.max_length} item(s)", path)
        number = obj if isinstance(obj, (int, float)) and not isinstance(obj, bool) else None
        if meta.ge is not None and number is not None and number < meta.ge:
            raise _fail(f"expected a number >= {meta.ge}", path)
        if meta.le is not None and number is not None and number > meta.le:
            raise _fail(f"expected a number <= {meta.le}", path)
