"""The permission policy client mode gives a driver in its ``permission-policy`` scenario.

``ACP_CONFORMANCE_PERMISSION_POLICY`` holds words ``ACTION=KIND``: ``allow`` or ``deny`` for a tool kind (``read``,
``edit``, ``execute``, ... or ``*`` for any), tried in order, the first that matches deciding. The driver sets its
client up to answer permission requests by it (acp-session: ``--allow read --deny-all``), and the judge holds each
answer to it: ``allow`` is an allow option selected; ``deny`` anything else (a reject option, the cancelled outcome,
an error). A driver whose client has no such policy exits with ``NO_POLICY`` before starting it: the check is then
not applicable, rather than failed for a setting the client does not have.
"""

from __future__ import annotations

__all__ = ["NO_POLICY", "POLICY", "POLICY_VARIABLE", "decide", "parse_policy"]

POLICY_VARIABLE = "ACP_CONFORMANCE_PERMISSION_POLICY"
POLICY = "allow=read deny=*"
"""The policy the scenario gives: reads approved, everything else refused."""
NO_POLICY = 77
"""The exit status by which a driver says its client cannot apply a permission policy (the automake "skip")."""

_ACTIONS = ("allow", "deny")


def parse_policy(text: str) -> list[tuple[str, str]]:
    """``[(action, kind), ...]`` in order; ``ValueError`` naming the first word that is not ``ACTION=KIND``."""
    rules: list[tuple[str, str]] = []
    for word in text.split():
        action, sep, kind = word.partition("=")
        if not sep or action not in _ACTIONS or not kind:
            raise ValueError(f"{word!r} is not ACTION=KIND (ACTION: allow or deny; KIND: a tool kind or *)")
        rules.append((action, kind))
    return rules


def decide(rules: list[tuple[str, str]], kind: object) -> str | None:
    """What the rules decide for a tool call of ``kind`` (None: no rule matches)."""
    for action, rule_kind in rules:
        if rule_kind == "*" or rule_kind == kind:
            return action
    return None
