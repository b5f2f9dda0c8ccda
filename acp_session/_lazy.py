"""Lazy package exports (PEP 562): a package's ``__init__`` names what each export's module is, and the module is
imported the first time the name is looked up. A submodule's parent package is always imported first, so an eager
``__init__`` makes every ``import acp_session.x.y`` pay for all of ``x``; each agent, runner and CLI process starts
with only what its path uses. Type checkers and the API reference read the package's ``TYPE_CHECKING`` imports,
which tests/test_lazy_start.py holds equal to the exports given here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, Iterable[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` whose names are ``{".module": names}``: each name is
    imported from its module on first use and then bound in the package (later look-ups are plain attributes); any
    other name that is a submodule of the package is imported, as an eager ``__init__`` would have left it bound."""
    where = {name: module for module, names in exports.items() for name in names}
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is not None:
            value = getattr(import_module(module, package), name)
            namespace[name] = value
            return value
        if not name.startswith("__"):
            try:
                return import_module(f"{package}.{name}")  # binds it in the package
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*namespace, *where, *namespace.get("__all__", ())})

    return __getattr__, __dir__
