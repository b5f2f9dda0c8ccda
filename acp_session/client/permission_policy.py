"""``PermissionPolicy``: permission requests answered by rules (tool kind and path) before anyone is asked.

A policy is data: rules tried in order, then a default (``allow``, ``deny`` or ``ask``). ``ask`` leaves the
request to the ``on_request_permission`` handler (without one: the cancelled outcome, never an approval). The
facts a rule looks at come from the request's subject and from the tool call's earlier updates on the same
connection (its kind and locations), so an agent that names only the tool call id is judged like one that
repeats everything. Sans-IO: ``decide`` is a pure function of the request and those facts.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Literal

from ..schema.types import (
    TOOL_KIND_VALUES,
    CommandPermissionSubject,
    PermissionOption,
    RequestPermissionRequest,
    ToolCallPermissionSubject,
)

__all__ = ["PermissionDecision", "PermissionPolicy", "PermissionRule", "PolicyAction", "ToolFacts"]

PolicyAction = Literal["allow", "deny", "ask"]
RuleAction = Literal["allow", "deny"]

_ALLOW_KINDS = ("allow_once", "allow_always")
_REJECT_KINDS = ("reject_once", "reject_always")


@dataclass(frozen=True)
class ToolFacts:
    """What a rule can look at: the tool call's kind (None: not reported) and the absolute paths it touches."""

    tool_call_id: str | None = None
    kind: str | None = None
    paths: tuple[str, ...] = ()
    command: str | None = None


@dataclass(frozen=True)
class PermissionRule:
    """``allow``/``deny`` a tool ``kind`` (``*``: any), optionally only when every path it touches matches
    ``path`` (a glob: ``*`` within a folder name, ``**`` across folders; relative to the policy's root)."""

    action: RuleAction
    kind: str = "*"
    path: str | None = None

    @classmethod
    def parse(cls, action: RuleAction, text: str) -> PermissionRule:
        """``KIND[:GLOB]`` (``edit:src/**``, ``read``, ``*:docs/**``); ``ValueError`` names what is wrong."""
        kind, colon, path = text.strip().partition(":")
        kind = kind.strip() or "*"
        if kind != "*" and kind not in TOOL_KIND_VALUES:
            known = ", ".join(sorted(TOOL_KIND_VALUES))
            raise ValueError(f"unknown tool kind {kind!r} in {text!r} (known: {known}, or * for any)")
        if colon and not path.strip():
            raise ValueError(f"an empty path after ':' in {text!r}")
        return cls(action, kind, path.strip() or None)

    def __str__(self) -> str:
        return f"{self.action} {self.kind}" + (f":{self.path}" if self.path is not None else "")

    def matches(self, facts: ToolFacts, root: str) -> bool:
        if self.kind != "*" and facts.kind != self.kind:
            return False
        if self.path is None:
            return True
        if not facts.paths:
            return False  # a path rule says nothing about a tool call that names no path
        pattern = _glob_regex(self.path if os.path.isabs(self.path) else os.path.join(root, self.path))
        return all(pattern.fullmatch(os.path.normpath(path)) is not None for path in facts.paths)


@dataclass(frozen=True)
class PermissionDecision:
    """What a policy decided for one request: the action, why (the rule, or the policy's default), and the
    option it picked (None with ``ask``, or when the agent offered no option of that kind: cancelled)."""

    action: PolicyAction
    reason: str
    option_id: str | None
    facts: ToolFacts


@dataclass(frozen=True)
class PermissionPolicy:
    """Rules tried in order, the first that matches decides; else ``default``. ``name`` is how the decision's
    reason names the default (``approve-reads``); ``root``: what relative rule paths are relative to (None:
    the process's working directory when the request arrives)."""

    rules: tuple[PermissionRule, ...] = ()
    default: PolicyAction = "ask"
    name: str = "policy"
    root: str | None = None

    @classmethod
    def approve_all(cls) -> PermissionPolicy:
        return cls((), "allow", "approve-all")

    @classmethod
    def approve_reads(cls) -> PermissionPolicy:
        """Reads and searches approved; everything else (edits, commands, ...) asked."""
        return cls((PermissionRule("allow", "read"), PermissionRule("allow", "search")), "ask", "approve-reads")

    @classmethod
    def deny_all(cls) -> PermissionPolicy:
        return cls((), "deny", "deny-all")

    @classmethod
    def ask(cls) -> PermissionPolicy:
        return cls((), "ask", "ask")

    def with_rules(self, *rules: PermissionRule) -> PermissionPolicy:
        """This policy with ``rules`` tried first."""
        return replace(self, rules=(*rules, *self.rules))

    def with_root(self, root: str) -> PermissionPolicy:
        return replace(self, root=os.path.abspath(root))

    def decide(self, request: RequestPermissionRequest, known: ToolFacts | None = None) -> PermissionDecision:
        """The decision for ``request``; ``known``: what earlier updates said about its tool call."""
        facts = facts_of(request, known)
        root = self.root if self.root is not None else os.getcwd()
        for rule in self.rules:
            if rule.matches(facts, root):
                return _decision(request, rule.action, f"rule {rule}", facts)
        return _decision(request, self.default, self.name, facts)


def facts_of(request: RequestPermissionRequest, known: ToolFacts | None = None) -> ToolFacts:
    """The request's own facts, with what is missing taken from ``known``."""
    base = known if known is not None else ToolFacts()
    subject = request.subject
    if isinstance(subject, ToolCallPermissionSubject):
        call = subject.tool_call
        kind = call.kind if isinstance(call.kind, str) else base.kind
        paths = tuple(loc.path for loc in call.locations) if isinstance(call.locations, list) else base.paths
        return ToolFacts(call.tool_call_id, kind, paths or base.paths, base.command)
    if isinstance(subject, CommandPermissionSubject):
        tool_call_id = subject.tool_call_id if isinstance(subject.tool_call_id, str) else base.tool_call_id
        return ToolFacts(tool_call_id, "execute", (subject.cwd,), subject.command)
    return base


def _decision(
    request: RequestPermissionRequest, action: PolicyAction, reason: str, facts: ToolFacts
) -> PermissionDecision:
    kinds = _ALLOW_KINDS if action == "allow" else _REJECT_KINDS if action == "deny" else ()
    option = _first_of(request.options, kinds)
    return PermissionDecision(action, reason, option.option_id if option is not None else None, facts)


def _first_of(options: list[PermissionOption], kinds: tuple[str, ...]) -> PermissionOption | None:
    for kind in kinds:  # the narrowest grant first: allow once before always
        for option in options:
            if option.kind == kind:
                return option
    return None


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """``**`` any run of folders (also none), ``*`` and ``?`` within one name; everything else literal."""
    out: list[str] = []
    parts = os.path.normpath(pattern).split(os.sep)
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        piece = "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in part)
        out.append(piece if last else piece + "/")
    return re.compile("".join(out))
