"""Packing test cases into shared runs: every agent run, server or client run costs seconds, so the mutation
tests play several defects in one run when their findings cannot mix."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

Item = TypeVar("Item")


def first_fit(items: Iterable[Item], joins: Callable[[list[Item], Item], bool]) -> list[list[Item]]:
    """The items in groups, in order: each joins the first group ``joins`` accepts it in, else starts one."""
    groups: list[list[Item]] = []
    for item in items:
        for group in groups:
            if joins(group, item):
                group.append(item)
                break
        else:
            groups.append([item])
    return groups
