"""The check sets: importing this package registers every check, the protocol v2 set (``v2/``) and the v1 set
(``v1/``), each one module per rule area; ``CHECK_SETS`` (``registry``) holds both."""

from __future__ import annotations

from ..registry import CHECK_SETS, Check, CheckContext
from . import v1, v2

__all__ = ["ALL_CHECK_IDS", "CHECKS", "CHECK_SETS", "Check", "CheckContext", "check_set", "v1", "v2"]

CHECKS: list[Check] = CHECK_SETS[2]
ALL_CHECK_IDS: frozenset[str] = frozenset(c.id for checks in CHECK_SETS.values() for c in checks)


def check_set(version: int) -> list[Check]:
    return CHECK_SETS[version]
