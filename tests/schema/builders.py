"""Build instances of the generated wire types: deterministic ones and hypothesis strategies.

Both walk ``msgspec.inspect`` type information, so every generated struct is covered without a
hand-written fixture per type.
"""

from __future__ import annotations

import types
import typing
from typing import Any

import msgspec
import msgspec.inspect as mi
from hypothesis import strategies as st

from acp_session._schema_runtime import _ALTERNATIVES, AcpStruct, DefaultVariant, OtherVariant


def alternatives_of(cls: type) -> tuple[Any, ...]:
    """The typed alternatives of an untagged union (catch-alls left out, default members unwrapped)."""
    return tuple(
        a.member if isinstance(a, DefaultVariant) else a for a in _ALTERNATIVES[cls] if not isinstance(a, OtherVariant)
    )


# Merged structs whose schema is a ``oneOf`` of field groups (the session or the request scope of an
# elicitation): exactly one group must be present, which the field list alone cannot say.
# v1's merged ``SetSessionConfigOptionRequest`` likewise: a value id goes without ``type``, a bool with ``boolean``.
ONE_OF_GROUPS: dict[str, dict[str, Any]] = {
    "ElicitationFormMode": {"session_id": "x", "request_id": msgspec.UNSET},
    "ElicitationUrlMode": {"session_id": "x", "request_id": msgspec.UNSET},
    "SetSessionConfigOptionRequest": {"value": "x", "type": msgspec.UNSET},
}


def build(tp: Any, *, full: bool) -> Any:
    """A deterministic value of ``tp``: every field filled (``full``) or only the required ones."""
    return _build(mi.type_info(tp), full)


def _build(info: mi.Type, full: bool) -> Any:
    if isinstance(info, mi.StructType):
        kwargs = {f.name: _build(f.type, full) for f in info.fields if f.required or full}
        kwargs.update(ONE_OF_GROUPS.get(info.cls.__name__, {}))
        return info.cls(**kwargs)
    if isinstance(info, mi.UnionType):
        non_null = [t for t in info.types if not isinstance(t, mi.NoneType)]
        return _build(non_null[0], full)
    if isinstance(info, mi.ListType):
        return [_build(info.item_type, full)]
    if isinstance(info, mi.DictType):
        return {"k": _build(info.value_type, full)}
    if isinstance(info, mi.CustomType):
        value = build(alternatives_of(info.cls)[0], full=full)
        return info.cls(value) if issubclass(info.cls, list) else value
    return _scalar(info)


def _scalar(info: mi.Type) -> Any:
    if isinstance(info, mi.StrType):
        return "x"
    if isinstance(info, mi.BoolType):
        return True
    if isinstance(info, mi.IntType):
        return max(1, info.ge or 0)
    if isinstance(info, mi.FloatType):
        return 0.5
    if isinstance(info, mi.LiteralType):
        return info.values[0]
    if isinstance(info, mi.NoneType):
        return None
    if isinstance(info, mi.AnyType):
        return {"any": [1, "two"]}
    raise TypeError(f"no builder for {info!r}")


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.text(max_size=5))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
    max_leaves=4,
)

_cache: dict[Any, st.SearchStrategy[Any]] = {}


def strategy(tp: Any) -> st.SearchStrategy[Any]:
    """A hypothesis strategy drawing valid instances of ``tp`` (known variants only)."""
    return _strategy(mi.type_info(tp))


def _strategy(info: mi.Type) -> st.SearchStrategy[Any]:
    key = info.cls if isinstance(info, (mi.StructType, mi.CustomType)) else None
    if key is not None and key in _cache:
        return _cache[key]
    result = st.deferred(lambda: _make(info))
    if key is not None:
        _cache[key] = result
    return result


def _make(info: mi.Type) -> st.SearchStrategy[Any]:
    if isinstance(info, mi.StructType):
        required = {f.name: _strategy(f.type) for f in info.fields if f.required}
        optional = {f.name: _strategy(f.type) for f in info.fields if not f.required}
        fixed = ONE_OF_GROUPS.get(info.cls.__name__, {})
        for name in fixed:
            optional.pop(name, None)

        def make(kwargs: dict[str, Any], cls: type = info.cls) -> Any:
            return cls(**kwargs, **fixed)

        return st.fixed_dictionaries(required, optional=optional).map(make)
    if isinstance(info, mi.UnionType):
        return st.one_of([_strategy(t) for t in info.types])
    if isinstance(info, mi.ListType):
        return st.lists(_strategy(info.item_type), min_size=1, max_size=2)
    if isinstance(info, mi.DictType):
        return st.dictionaries(st.text(min_size=1, max_size=4), _strategy(info.value_type), max_size=2)
    if isinstance(info, mi.CustomType):
        options = [strategy(a) for a in alternatives_of(info.cls)]
        drawn = st.one_of(options)
        return drawn.map(info.cls) if issubclass(info.cls, list) else drawn
    if isinstance(info, mi.StrType):
        return st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=6)
    if isinstance(info, mi.BoolType):
        return st.booleans()
    if isinstance(info, mi.IntType):
        low = 0 if info.ge is None else info.ge
        return st.integers(low, 65535 if info.le is None else info.le)
    if isinstance(info, mi.FloatType):
        return st.floats(0, 1, allow_nan=False)  # the schema bounds some numbers (priority) to [0, 1]
    if isinstance(info, mi.LiteralType):
        return st.sampled_from(info.values)
    if isinstance(info, mi.NoneType):
        return st.none()
    if isinstance(info, mi.AnyType):
        return json_values
    raise TypeError(f"no strategy for {info!r}")


def struct_classes(module: types.ModuleType) -> list[type[AcpStruct]]:
    """Every wire struct defined in a generated module."""
    return [
        value
        for name, value in vars(module).items()
        if isinstance(value, type)
        and issubclass(value, AcpStruct)
        and value.__module__ == module.__name__
        and not name.startswith("_")
    ]


def schema_home(module: types.ModuleType, cls: type[msgspec.Struct], defs: dict[str, Any]) -> tuple[str, Any]:
    """The schema definition a struct's JSON must satisfy, and the Python type to decode it back as."""
    config = cls.__struct_config__
    if config.tag is None and cls.__name__ in defs:
        return cls.__name__, cls
    for name, value in vars(module).items():
        if name not in defs:
            continue
        if (value is cls and name != cls.__name__) or (
            typing.get_origin(value) in (typing.Union, types.UnionType) and cls in typing.get_args(value)
        ):
            return name, value
        if isinstance(value, type) and value in _ALTERNATIVES and cls in alternatives_of(value):
            return name, value
    raise LookupError(f"no schema definition holds {cls.__name__}")
