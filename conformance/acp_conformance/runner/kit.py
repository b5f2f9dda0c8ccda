"""The official ACP test kit's requirement registries (``agentclientprotocol/acp-tck``, ``src/tck/v1`` and
``src/tck/v2`` ``requirements.py``): every id with the kit's tier, and why the ids no check here judges are
NOT_TESTED.

Which check judges an id is said once, in tiers.py (a check maps to an id when it judges the same observable);
this module holds the kit's side, so a report and docs/conformance.md can account for every id of the kit, and
a test holds the two together (every id mapped or explained, never both, no id the kit does not have).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from .tiers import CLASSIFICATIONS, Tier

__all__ = ["KIT", "KitRow", "kit_rows", "kit_table"]

M, C, A, INFO = Tier.MANDATORY, Tier.CAPABILITY, Tier.ADVISORY, Tier.INFORMATIONAL


def _ids(tier: Tier, text: str) -> dict[str, Tier]:
    return {f"ACP-{name}": tier for name in text.split()}


# -- the kit's v2 registry ----------------------------------------------------------------------------------

_V2: dict[str, Tier] = {
    **_ids(
        M,
        "INIT-001 INIT-201 INIT-003 INIT-202 INIT-203 INIT-204 SCHEMA-001 TRANSPORT-201 TRANSPORT-002 "
        "TRANSPORT-203 JSONRPC-001 JSONRPC-002 JSONRPC-003 BATCH-201 BATCH-202 AUTH-202 AUTH-206 AUTH-207 EXT-001",
    ),
    **_ids(
        C,
        "SESSION-001 SESSION-002 PROMPT-205 PROMPT-201 PROMPT-203 STATE-201 STATE-202 STATE-203 PROMPTCAP-001 "
        "PROMPTCAP-002 PROMPTCAP-003 PERM-201 CLIENTCAP-201 CLIENTCAP-202 CANCEL-201 CANCEL-202 CANCEL-203 "
        "CANCEL-205 CANCEL-206 CANCEL-207 CANCEL-208 SESSION-203 RESUME-201 RESUME-202 RESUME-203 RESUME-204 "
        "RESUME-205 LIST-201 LIST-202 LIST-203 LIST-204 CLOSE-201 CLOSE-202 DELETE-201 DELETE-202 ADDDIRS-201 "
        "ADDDIRS-202 CONFIG-201 CONFIG-202 CONFIG-203 CONFIG-204 CONFIG-206 AUTH-203 AUTH-204 PATCH-201 PATCH-203 "
        "PATCH-204 PATCH-205 PATCH-206 PATCH-207 ENUM-201",
    ),
    **_ids(
        A,
        "PROMPT-003 JSONRPC-004 JSONRPC-005 BATCH-203 BATCH-204 BATCH-205 DELETE-203 AUTH-201 AUTH-205 PATCH-208 "
        "PATCH-209 ENUM-202 ENUM-203 META-001 META-201 EXT-201 EXT-202 ERROR-001 SHUTDOWN-001 SCHEMA-002",
    ),
    **_ids(
        INFO,
        "INFO-CONCURRENT-201 INFO-UNKNOWNSESSION-001 CANCEL-204 INFO-CANCEL-201 INFO-CANCEL-202 BATCH-206 "
        "BATCH-207 BATCH-208 INFO-BATCH-201 INFO-BATCH-202 MCP-201 MCP-202 EXT-203 STDERR-001 INFO-PARSE-001 "
        "INFO-INVALIDREQ-001",
    ),
}

# -- the kit's v1 registry ----------------------------------------------------------------------------------

_V1: dict[str, Tier] = {
    **_ids(
        M,
        "TRANSPORT-001 TRANSPORT-002 JSONRPC-001 JSONRPC-002 JSONRPC-003 INIT-001 INIT-002 INIT-003 SCHEMA-001 "
        "SESSION-001 SESSION-002 PROMPT-001 PROMPT-002 CANCEL-001 CANCEL-002 CONFIG-003 AUTH-002 CLIENTCAP-001 "
        "CLIENTCAP-002 CLIENTCAP-003 EXT-001",
    ),
    **_ids(
        C,
        "LOAD-001 LOAD-002 RESUME-001 RESUME-002 LIST-001 LIST-002 DELETE-001 CLOSE-001 CLOSE-002 ADDDIRS-001 "
        "MODES-001 MODES-002 CONFIG-001 CONFIG-002 PROMPTCAP-001 PROMPTCAP-002 PROMPTCAP-003 AUTH-003 AUTH-004",
    ),
    **_ids(
        A,
        "JSONRPC-004 JSONRPC-005 INIT-004 PROMPT-003 LOAD-003 DELETE-002 AUTH-001 AUTH-005 META-001 ERROR-001 "
        "SHUTDOWN-001 SCHEMA-002",
    ),
    **_ids(INFO, "STDERR-001 INFO-PARSE-001 INFO-INVALIDREQ-001 INFO-UNKNOWNSESSION-001"),
}

KIT: dict[int, dict[str, Tier]] = {1: _V1, 2: _V2}
"""Protocol version -> the kit's requirement ids and their tiers."""

# -- why the ids no check judges are NOT_TESTED -------------------------------------------------------------

_RECORD_ONLY = "the kit only records it (INFORMATIONAL, never asserted); acp-conformance records nothing for it"
_NOT_YET = "not checked yet: no check here makes this probe"
_SHARED = {
    "ACP-JSONRPC-001": "not judged on its own: the runner matches answers by id, so an answer whose id does not "
    "echo the request's is never taken for it and the check waiting for it fails on its timeout",
    "ACP-JSONRPC-002": _NOT_YET,
    "ACP-ERROR-001": _NOT_YET,
    "ACP-SHUTDOWN-001": _NOT_YET,
    "ACP-SCHEMA-002": _NOT_YET,
    "ACP-STDERR-001": _RECORD_ONLY,
    "ACP-INFO-PARSE-001": _RECORD_ONLY,
    "ACP-INFO-INVALIDREQ-001": _RECORD_ONLY,
    "ACP-INFO-UNKNOWNSESSION-001": _RECORD_ONLY,
}
_WHY_NOT: dict[int, dict[str, str]] = {
    2: {
        **_SHARED,
        "ACP-INIT-202": "version-too-old sends the same downgrade probe but follows the v2 schema, which allows "
        "-32022 where the kit requires a success (see Tiers); it maps to no kit id",
        "ACP-AUTH-203": "not run: auth/logout may revoke the operator's own credentials (the kit needs "
        "--allow-logout too)",
        "ACP-RESUME-205": "the current v2 docs let a replay be chunks alone (session-setup.mdx, replay: messages "
        "'with full content arrays or as chunks'; a chunk appends to its message's content), so no whole-message "
        "update is required before a chunk: the kit's rule asks more than the text",
        "ACP-BATCH-205": "a rule for the sender, which matches answers to requests by id (the runner does), and a MAY "
        "for the agent (any order in the array): nothing of the agent's to judge",
        "ACP-CANCEL-204": "unobservable: nothing on the wire tells 'stopped as soon as possible' from 'stopped "
        "eventually' (the kit only records it, never asserts)",
        "ACP-INFO-CONCURRENT-201": _RECORD_ONLY + " (the docs leave a second prompt while busy to the agent: "
        "held-prompt-cancel-request notes which way it goes)",
        "ACP-INFO-CANCEL-201": _RECORD_ONLY + " (unspecified: notifications-unanswered only holds that a "
        "session/cancel of an idle session gets no answer)",
        "ACP-INFO-CANCEL-202": "cancel-permission warns (ACP2-003, a SHOULD) when the pending request is not "
        "withdrawn with $/cancel_request; the kit only records it",
        "ACP-BATCH-206": _RECORD_ONLY + " (a MAY: any order, any parallelism; nothing to judge)",
        "ACP-BATCH-207": _RECORD_ONLY + " (a MAY of the sender: a client cannot make the agent batch)",
        "ACP-BATCH-208": _RECORD_ONLY + " (a SHOULD NOT of the sender, not of the agent under test)",
        "ACP-INFO-BATCH-201": _RECORD_ONLY + " (an invalid-JSON batch line: the SDKs disagree)",
        "ACP-INFO-BATCH-202": _RECORD_ONLY + " (a batch mixing calls and answers: no text forbids it)",
        "ACP-MCP-201": _RECORD_ONLY + " (whether the agent can reach a server is its business; unsupported-mcp "
        "checks the refusal of an unadvertised transport)",
        "ACP-MCP-202": _RECORD_ONLY + " (as ACP-MCP-201, for HTTP servers)",
        "ACP-EXT-203": _RECORD_ONLY + " (the schema lets the agent ignore an unknown $/ notification)",
    },
    1: {
        **_SHARED,
        "ACP-AUTH-004": "not run: logout may revoke the operator's own credentials (the kit needs --allow-logout too)",
    },
}


@dataclass(frozen=True)
class KitRow:
    id: str
    tier: Tier  # the kit's tier for the id
    checks: tuple[str, ...]  # the checks here that judge it (tiers.py), or none
    reason: str  # why it is NOT_TESTED when no check judges it ("" otherwise)


def kit_rows(version: int) -> list[KitRow]:
    """Every id of the kit's registry for ``version``, in the kit's order, with our checks or the reason."""
    covering: dict[str, list[str]] = {}
    for check_id, entry in CLASSIFICATIONS[version].items():
        for requirement in entry.requirements:
            covering.setdefault(requirement, []).append(check_id)
    why = _WHY_NOT[version]
    return [
        KitRow(kit_id, tier, tuple(covering.get(kit_id, ())), "" if kit_id in covering else why.get(kit_id, ""))
        for kit_id, tier in KIT[version].items()
    ]


def kit_table(version: int) -> str:
    """The markdown table of docs/conformance.md: one row per kit id, its tier, our checks or why not."""
    lines = ["| kit id | kit tier | checked by | or NOT_TESTED because |", "|---|---|---|---|"]
    for row in kit_rows(version):
        checks = ", ".join(f"`{c}`" for c in row.checks) or "-"
        lines.append(f"| {row.id} | {row.tier.value} | {checks} | {row.reason or '-'} |")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - a helper for editing the docs
    for v in (int(a) for a in sys.argv[1:] or ("2", "1")):
        print(f"v{v}:\n{kit_table(v)}\n")
