"""Each check's tier, its rule ids (ACP2-/ACP1-) and the official test kit's requirement ids it matches.

The tier decides what a result means for the verdict (the model of the official ACP test kit):

- MANDATORY: a MUST every agent has; a failure, or the check not run at all (NOT_TESTED), makes the agent
  non-conformant.
- CAPABILITY: a MUST that applies once the agent offers the feature (a capability, a scenario that triggers
  it); not applicable does not count, a failure does.
- ADVISORY: a SHOULD, or a rule whose error code the spec only recommends; reported, never decides.
- INFORMATIONAL: recorded only.

The table is kept apart from the checks themselves so the check code stays about behaviour; a test holds
every check to having an entry, and ``docs/conformance.md`` carries the generated table
(``python -m acp_conformance.runner.tiers`` prints it).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from enum import Enum

__all__ = ["REMOTE_CLASSIFICATIONS", "Classification", "Tier", "classify", "requirement_table", "rule_ids"]


class Tier(str, Enum):
    MANDATORY = "MANDATORY"
    CAPABILITY = "CAPABILITY"
    ADVISORY = "ADVISORY"
    INFORMATIONAL = "INFORMATIONAL"


@dataclass(frozen=True)
class Classification:
    tier: Tier
    requirements: tuple[str, ...] = ()  # the official test kit's ids (ACP-INIT-001, ...) this check covers
    rules: tuple[str, ...] = ()  # rule ids the check's own list does not name already


M, C, A, INFO = Tier.MANDATORY, Tier.CAPABILITY, Tier.ADVISORY, Tier.INFORMATIONAL

# v2: the kit puts the whole session surface under the `session` capability (only initialize is required of
# every agent); the transport and JSON-RPC envelope rules stay MANDATORY.
_V2: dict[str, Classification] = {
    # transport: the kit holds ACP-BATCH-201/202 MANDATORY (the older docs); the current schema has no batches:
    # each batch rule is an ADVISORY check of its own.
    "framing": Classification(M, ("ACP-TRANSPORT-201",)),
    "stdout-utf8": Classification(M, ("ACP-TRANSPORT-002",)),
    "one-line-messages": Classification(M, ("ACP-TRANSPORT-203",)),
    "batch-empty": Classification(A, ("ACP-BATCH-201",)),
    "batch-notifications": Classification(A, ("ACP-BATCH-202",)),
    "batch-requests": Classification(A, ("ACP-BATCH-204",)),
    "batch-invalid-entries": Classification(A, ("ACP-BATCH-203",)),
    "connection-survives": Classification(A, ("ACP-JSONRPC-005",)),
    "stdin-eof-exit": Classification(A, ("ACP-SHUTDOWN-001",)),
    # initialization
    "initialize": Classification(M, ("ACP-INIT-001",)),
    "protocol-version": Classification(M, ("ACP-INIT-201",)),
    "agent-info": Classification(M, ("ACP-INIT-203",)),
    "capability-markers": Classification(M, ("ACP-INIT-204",)),
    "initialize-schema": Classification(M, ("ACP-SCHEMA-001",)),
    "capability-extensions": Classification(A, ("ACP-EXT-202",)),
    "version-negotiation": Classification(M, ("ACP-INIT-003",)),
    "version-too-old": Classification(M, ()),  # the kit (ACP-INIT-202) wants a success; the schema allows -32022
    "auth-methods": Classification(C, ("ACP-AUTH-204",)),
    "auth-method-ids": Classification(A, ("ACP-AUTH-201",)),
    "auth-method-types": Classification(M, ("ACP-AUTH-206",)),
    "terminal-auth-gated": Classification(M, ("ACP-AUTH-202",)),
    "terminal-auth-methods": Classification(M, ("ACP-AUTH-207",)),
    "login-without-methods": Classification(A, ("ACP-AUTH-205",)),
    # sessions
    "session-new": Classification(C, ("ACP-SESSION-001",)),
    "session-ids-distinct": Classification(C, ("ACP-SESSION-002",)),
    "available-commands": Classification(C, ()),
    "session-list": Classification(C, ("ACP-LIST-201",)),
    "session-list-empty": Classification(C, ("ACP-LIST-202",)),
    "session-list-cwd": Classification(C, ("ACP-LIST-203",)),
    "session-list-absolute": Classification(C, ("ACP-LIST-204",)),
    "session-delete": Classification(C, ("ACP-DELETE-201",)),
    "session-delete-unlisted": Classification(C, ("ACP-DELETE-202",)),
    "session-delete-again": Classification(A, ("ACP-DELETE-203",)),
    "unsupported-mcp": Classification(C, ()),
    "optional-forms": Classification(C, ("ACP-SESSION-203",)),
    "additional-directories": Classification(C, ("ACP-ADDDIRS-201",)),
    "resume-additional-directories": Classification(C, ("ACP-ADDDIRS-202",)),
    # prompt turn
    "prompt-accepted": Classification(C, ("ACP-PROMPT-201",)),
    "message-ids-distinct": Classification(C, ("ACP-PATCH-203",)),
    "user-message-echo": Classification(C, ("ACP-PROMPT-203",)),
    "message-ids": Classification(C, ("ACP-PATCH-201",)),
    "update-schema": Classification(C, ("ACP-PROMPT-205",)),
    "update-kinds-known": Classification(A, ("ACP-ENUM-202",)),
    "running-before-idle": Classification(C, ("ACP-STATE-201",)),
    "turn-ends-idle": Classification(C, ("ACP-STATE-202",)),
    "turn-lifecycle": Classification(C, ()),
    "stop-reason": Classification(C, ("ACP-STATE-203",)),
    "scenario-stop-reasons": Classification(C, ()),
    "baseline-content": Classification(C, ("ACP-PROMPT-003",)),
    "unsupported-content": Classification(C, ()),
    "prompt-image": Classification(C, ("ACP-PROMPTCAP-001",)),
    "prompt-audio": Classification(C, ("ACP-PROMPTCAP-002",)),
    "prompt-embedded-context": Classification(C, ("ACP-PROMPTCAP-003",)),
    # permissions and tools
    "permission-request": Classification(C, ("ACP-PERM-201",)),
    "permission-requires-action": Classification(A, ("ACP-PATCH-209",)),
    "permission-custom-outcome": Classification(A, ("ACP-ENUM-203",)),
    "permission-flow": Classification(C, ()),
    "tool-call": Classification(C, ()),
    "tool-call-ids": Classification(C, ("ACP-PATCH-204",)),
    "tool-call-title": Classification(A, ("ACP-PATCH-208",)),
    "open-enums": Classification(C, ("ACP-ENUM-201",)),
    "plan": Classification(C, ("ACP-PATCH-205",)),
    "plan-shape": Classification(C, ()),
    "terminal": Classification(C, ("ACP-PATCH-206",)),
    "terminal-output": Classification(C, ("ACP-PATCH-207",)),
    # cancellation
    "cancel-turn": Classification(C, ("ACP-CANCEL-201",)),
    "cancel-nothing-after": Classification(C, ("ACP-CANCEL-202",)),
    "cancel-not-error": Classification(C, ("ACP-CANCEL-203",)),
    "cancel-stop-reason": Classification(C, ("ACP-CANCEL-207",)),
    "cancel-unanswered": Classification(C, ("ACP-CANCEL-205",)),
    "cancel-with-meta": Classification(C, ("ACP-CANCEL-206",)),
    "cancel-permission": Classification(C, ()),
    "held-prompt-cancel-request": Classification(C, ()),
    "cancel-held-prompts": Classification(C, ()),
    "cancel-request-ignored": Classification(M, ()),
    # close and resume: the kit counts one observation, the cancelled idle before the close answer, twice.
    "close": Classification(C, ("ACP-CLOSE-201",)),
    "closed-session": Classification(C, ()),
    "close-active-work": Classification(C, ("ACP-CLOSE-202", "ACP-CANCEL-208")),
    "close-held-prompts": Classification(C, ()),
    "resume": Classification(C, ("ACP-RESUME-201",)),
    "resume-state-snapshot": Classification(C, ()),
    "resume-no-replay": Classification(C, ("ACP-RESUME-203",)),
    "resume-replay": Classification(C, ("ACP-RESUME-202",)),
    "resume-message-ids": Classification(C, ("ACP-RESUME-204",)),
    "resume-bad-cursor": Classification(C, ()),
    # client methods
    "client-methods-known": Classification(C, ("ACP-CLIENTCAP-202",)),
    "no-elicitation-unadvertised": Classification(C, ("ACP-CLIENTCAP-201",)),
    # config options
    "config-option-shapes": Classification(C, ("ACP-CONFIG-201",)),
    "config-current-value": Classification(C, ("ACP-CONFIG-204",)),
    "config-options": Classification(C, ("ACP-CONFIG-202",)),
    "config-set-value": Classification(C, ()),
    "config-option-errors": Classification(C, ()),
    "resume-config-options": Classification(C, ("ACP-CONFIG-203",)),
    "config-option-update": Classification(C, ("ACP-CONFIG-206",)),
    # errors and extensibility
    "unknown-method": Classification(A, ("ACP-JSONRPC-004",)),
    "custom-request-answered": Classification(M, ("ACP-EXT-001",)),
    "custom-notification-ignored": Classification(A, ("ACP-EXT-201",)),
    "notifications-unanswered": Classification(M, ("ACP-JSONRPC-003",)),
    "invalid-params": Classification(A, ()),
    "meta-accepted": Classification(A, ("ACP-META-001",)),
    "meta-objects": Classification(A, ("ACP-META-201",)),
    "no-unknown-root-keys": Classification(A, ("ACP-SCHEMA-002",)),
    "response-ids": Classification(M, ("ACP-JSONRPC-001",)),
    "response-shape": Classification(M, ("ACP-JSONRPC-002",)),
    "error-messages": Classification(A, ("ACP-ERROR-001",)),
    "background-work": Classification(C, ()),
    # Beyond the kit (refused means refused): no kit id judges what an agent does after a refusal.
    "permission-refused": Classification(C, ()),
    "permission-asked": Classification(A, ()),
    "pipelined-session-new": Classification(A, ()),  # beyond the kit: the reference agent's own defect (issue 50)
}

# v1: the kit holds the v1 session baseline (ACP1-012) and cancellation MANDATORY. Each kit id maps to the one
# check that makes the observation its text describes (so a defect fails that id and no other).
_V1: dict[str, Classification] = {
    "framing": Classification(M, ("ACP-TRANSPORT-001",)),
    "stdout-utf8": Classification(M, ("ACP-TRANSPORT-002",)),
    "unasked-updates": Classification(M, ()),
    "shutdown": Classification(A, ("ACP-SHUTDOWN-001",)),
    "message-schema": Classification(M, ("ACP-SCHEMA-001",)),
    "response-ids": Classification(M, ("ACP-JSONRPC-001",)),
    "response-shape": Classification(M, ("ACP-JSONRPC-002",)),
    "notifications-unanswered": Classification(M, ("ACP-JSONRPC-003",)),
    "initialize": Classification(M, ("ACP-INIT-001",)),
    "agent-info": Classification(A, ("ACP-INIT-004",)),
    "version-negotiation": Classification(M, ("ACP-INIT-003",)),
    "version-exact": Classification(M, ("ACP-INIT-002",)),
    "terminal-auth": Classification(M, ("ACP-AUTH-002",)),
    "auth-methods": Classification(C, ()),
    "auth-method-ids": Classification(A, ("ACP-AUTH-001",)),
    "auth-login": Classification(C, ("ACP-AUTH-003",)),
    "login-not-required": Classification(A, ("ACP-AUTH-005",)),
    "session-new": Classification(M, ("ACP-SESSION-001",)),
    "distinct-session-ids": Classification(M, ("ACP-SESSION-002",)),
    "additional-directories": Classification(C, ("ACP-ADDDIRS-001",)),
    "session-list": Classification(C, ("ACP-LIST-001",)),
    "list-cwd-filter": Classification(C, ()),
    "list-empty": Classification(C, ("ACP-LIST-002",)),
    "session-delete": Classification(C, ("ACP-DELETE-001",)),
    "delete-removes": Classification(C, ()),
    "delete-unknown": Classification(A, ("ACP-DELETE-002",)),
    "prompt-turn": Classification(M, ("ACP-PROMPT-001",)),
    "turn-updates": Classification(M, ("ACP-PROMPT-002",)),
    "baseline-content": Classification(M, ("ACP-PROMPT-003",)),
    "unsupported-content": Classification(INFO, ()),
    "prompt-image": Classification(C, ("ACP-PROMPTCAP-001",)),
    "prompt-audio": Classification(C, ("ACP-PROMPTCAP-002",)),
    "prompt-embedded": Classification(C, ("ACP-PROMPTCAP-003",)),
    "permission-request": Classification(C, ()),
    "tool-call": Classification(C, ()),
    "plan": Classification(C, ()),
    "client-fs": Classification(C, ()),
    "client-terminals": Classification(C, ()),
    "fs-gated": Classification(M, ("ACP-CLIENTCAP-001",)),
    "terminal-gated": Classification(M, ("ACP-CLIENTCAP-002",)),
    "elicitation-gated": Classification(M, ("ACP-CLIENTCAP-003",)),
    "cancel-turn": Classification(M, ("ACP-CANCEL-001",)),
    "cancel-updates-first": Classification(M, ("ACP-CANCEL-002",)),
    "cancel-permission": Classification(M, ("ACP-CANCEL-001",), ("ACP1-002", "ACP1-025")),
    "session-load": Classification(C, ("ACP-LOAD-001",)),
    "load-replay": Classification(C, ()),
    "load-replay-first": Classification(C, ("ACP-LOAD-002",)),
    "load-result-object": Classification(A, ("ACP-LOAD-003",)),
    "session-resume": Classification(C, ("ACP-RESUME-001",)),
    "resume-no-replay": Classification(C, ("ACP-RESUME-002",)),
    "session-close": Classification(C, ("ACP-CLOSE-001",)),
    "close-busy": Classification(C, ("ACP-CLOSE-002",)),
    "modes-state": Classification(C, ("ACP-MODES-001",)),
    "session-modes": Classification(C, ("ACP-MODES-002",)),
    "config-values": Classification(C, ("ACP-CONFIG-001",)),
    "boolean-options": Classification(M, ("ACP-CONFIG-003",)),
    "config-options": Classification(C, ("ACP-CONFIG-002",)),
    "unknown-method": Classification(A, ("ACP-JSONRPC-004",)),
    "ext-method": Classification(M, ("ACP-EXT-001",)),
    "invalid-params": Classification(A, ()),
    "usable-after-error": Classification(A, ("ACP-JSONRPC-005",)),
    "error-messages": Classification(A, ("ACP-ERROR-001",)),
    "meta-accepted": Classification(A, ("ACP-META-001",)),
    "custom-root-fields": Classification(A, ("ACP-SCHEMA-002",)),
    "record-parse-error": Classification(INFO, ("ACP-INFO-PARSE-001",)),
    "record-invalid-request": Classification(INFO, ("ACP-INFO-INVALIDREQ-001",)),
    "record-unknown-session": Classification(INFO, ("ACP-INFO-UNKNOWNSESSION-001",)),
    "record-stderr": Classification(INFO, ("ACP-STDERR-001",)),
    "permission-refused": Classification(C, ()),  # beyond the kit, as in v2
    "permission-asked": Classification(A, ()),
    "pipelined-session-new": Classification(A, ()),  # beyond the kit: the reference agent's own defect (issue 50)
}

CLASSIFICATIONS: dict[int, dict[str, Classification]] = {1: _V1, 2: _V2}
_RULE_ID = re.compile(r"ACP[12]-\d{3}")


REMOTE_CLASSIFICATIONS: dict[str, Classification] = {}
"""The remote transport's checks (``checks_remote`` registers each with its tier), the same on v1 and v2."""


def classify(version: int, check_id: str) -> Classification:
    """The tier and ids of one check (a KeyError names a check without an entry: add one above)."""
    remote = REMOTE_CLASSIFICATIONS.get(check_id)
    return remote if remote is not None else CLASSIFICATIONS[version][check_id]


def rule_ids(version: int, check_id: str, rules: tuple[str, ...]) -> list[str]:
    """The numbered rules (ACP2-NNN / ACP1-NNN) a check covers: those in its rule list, then the table's."""
    found = [r for r in rules if _RULE_ID.fullmatch(r)]
    return found + [r for r in classify(version, check_id).rules if r not in found]


def requirement_table(version: int) -> str:
    """The markdown table of docs/conformance.md for one check set: check, tier, rule ids, the kit's ids."""
    from .registry import CHECK_SETS, in_report_order

    lines = ["| check | tier | rules | official kit |", "|---|---|---|---|"]
    for c in in_report_order(CHECK_SETS[version]):
        entry = classify(version, c.id)
        rules = ", ".join(rule_ids(version, c.id, c.rules)) or "-"
        kit = ", ".join(entry.requirements) or "-"
        lines.append(f"| `{c.id}` | {entry.tier.value} | {rules} | {kit} |")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - a helper for editing the docs
    from . import checks  # noqa: F401  (registers both check sets)

    for v in (int(a) for a in sys.argv[1:] or ("2", "1")):
        print(f"v{v}:\n{requirement_table(v)}\n")
