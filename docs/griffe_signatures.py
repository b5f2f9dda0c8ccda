"""A griffe extension for the API reference: classes whose constructor griffe cannot see in the source (msgspec
structs, whose ``__init__`` msgspec generates; exceptions that inherit a builtin one) get their signature from the
imported class, so every public class in the reference shows how to construct it. Protocols (interfaces to
implement, not to construct) are left alone. Used by mkdocs.yml (mkdocstrings ``extensions``)."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import griffe
import msgspec

_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: griffe.ParameterKind.positional_only,
    inspect.Parameter.POSITIONAL_OR_KEYWORD: griffe.ParameterKind.positional_or_keyword,
    inspect.Parameter.VAR_POSITIONAL: griffe.ParameterKind.var_positional,
    inspect.Parameter.KEYWORD_ONLY: griffe.ParameterKind.keyword_only,
    inspect.Parameter.VAR_KEYWORD: griffe.ParameterKind.var_keyword,
}


def _runtime(cls: griffe.Class) -> Any:
    try:
        return getattr(importlib.import_module(cls.module.path), cls.name)
    except (ImportError, AttributeError):
        return None


def _default(value: Any) -> str | None:
    if value is inspect.Parameter.empty:
        return None
    if type(value).__name__ == "_Factory" or "factory" in repr(value):
        return "..."
    return repr(value)


def _signature_of(cls: griffe.Class, runtime: Any) -> griffe.Parameters | None:
    try:
        signature = inspect.signature(runtime)
    except (TypeError, ValueError):  # a builtin constructor (an exception's): its arguments, as Python takes them
        if isinstance(runtime, type) and issubclass(runtime, BaseException):
            return griffe.Parameters(griffe.Parameter("args", kind=griffe.ParameterKind.var_positional))
        return None
    parameters = []
    for parameter in signature.parameters.values():
        member = cls.all_members.get(parameter.name) if parameter.name in cls.all_members else None
        annotation = getattr(member, "annotation", None)
        if annotation is None and parameter.annotation is not inspect.Parameter.empty:
            annotation = inspect.formatannotation(parameter.annotation).replace("typing.", "")
        parameters.append(
            griffe.Parameter(
                parameter.name,
                annotation=annotation,
                kind=_KINDS[parameter.kind],
                default=_default(parameter.default),
            )
        )
    return griffe.Parameters(*parameters)


class ConstructorSignatures(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._visit(pkg)

    def _visit(self, obj: griffe.Object) -> None:
        for member in list(obj.members.values()):
            if member.is_alias:
                continue
            if isinstance(member, griffe.Class):
                self._add_init(member)
            if isinstance(member, (griffe.Module, griffe.Class)):
                self._visit(member)

    def _add_init(self, cls: griffe.Class) -> None:
        runtime = _runtime(cls)
        if runtime is None or getattr(runtime, "_is_protocol", False):
            return
        if not (isinstance(runtime, type) and issubclass(runtime, msgspec.Struct)):  # each struct has its own
            try:
                if "__init__" in cls.all_members:
                    return
            except griffe.AliasResolutionError:
                return
        parameters = _signature_of(cls, runtime)
        if parameters is None:
            return
        init = griffe.Function("__init__", parameters=griffe.Parameters(griffe.Parameter("self"), *parameters))
        init.parent = cls
        cls.set_member("__init__", init)
