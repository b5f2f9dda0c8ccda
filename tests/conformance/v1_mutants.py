"""The v1 mutation table: each broken v1 mode of the reference agent (``--broken v1-...``), the official kit id it
breaks, and exactly what the v1 check set must report for it (the checks that fail, with the rule each failure
message starts with; the checks it leaves with something else to say). test_v1_mutants.py holds real runs to it
and docs/conformance.md carries it (``mutation_table``; ``python -m tests.conformance.v1_mutants`` prints it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from acp_conformance.runner.checks import CHECK_SETS
from acp_conformance.runner.kit import KIT, kit_rows
from acp_conformance.runner.tiers import CLASSIFICATIONS

__all__ = ["BEYOND_KIT_MODES", "MUTANTS", "UNREACHABLE", "Mutant", "mutation_table"]


@dataclass(frozen=True)
class Mutant:
    mode: str
    kit: tuple[str, ...]  # the kit ids it turns FAIL (none: it breaks a check that maps to no kit id)
    fails: dict[str, str]  # check -> the rule its failure message starts with
    moves: dict[str, str] = field(default_factory=dict)  # other checks whose result changes, and to what
    why: str = ""  # why more than its own check moves
    args: tuple[str, ...] = ()  # more agent arguments
    auth: str | None = None  # acp-conformance --auth
    login_blocks: bool = False  # every check that needs a session is not run (the agent wants a login)
    alone: bool = False  # shares its run with no other mode
    hook: str = ""  # the agent's place it changes, when modes could undo each other there (they never share a run)


NO_AUTH_METHOD_NOW = {"login-not-required": "n/a"}
_WHY_AUTH = (
    "advertising an auth method makes the auth checks apply and login-not-required n/a (AUTH-005 is about agents "
    "without one)"
)

MUTANTS: tuple[Mutant, ...] = (
    Mutant("junk-stdout", ("ACP-TRANSPORT-001",), {"framing": "transports.mdx#stdio"}),
    Mutant("v1-bad-utf8", ("ACP-TRANSPORT-002",), {"stdout-utf8": "transports.mdx#stdio"}),
    Mutant(
        "v1-bad-commands",
        ("ACP-SCHEMA-001",),
        {"message-schema": "schema:AgentNotification"},
    ),
    Mutant("v1-unasked-notice", (), {"unasked-updates": "ACP1-019"}),
    Mutant("v1-linger", ("ACP-SHUTDOWN-001",), {"shutdown": "transports.mdx#stdio"}),
    Mutant("v1-string-ids", ("ACP-JSONRPC-001",), {"response-ids": "ACP1-004"}),
    Mutant("v1-result-and-error", ("ACP-JSONRPC-002",), {"response-shape": "overview.mdx#error-handling"}),
    Mutant(
        "v1-answer-notifications", ("ACP-JSONRPC-003",), {"notifications-unanswered": "overview.mdx#error-handling"}
    ),
    Mutant(
        "v1-bad-initialize",
        ("ACP-INIT-001", "ACP-SCHEMA-001"),
        {"initialize": "schema:InitializeResponse", "message-schema": "schema:AgentResponse"},
        why="the initialize answer is a message of the basic exchange message-schema validates",
    ),
    Mutant("v1-no-agent-info", ("ACP-INIT-004",), {"agent-info": "initialization.mdx#implementation-information"}),
    Mutant("v1-echo-version", ("ACP-INIT-003",), {"version-negotiation": "initialization.mdx#version-negotiation"}),
    Mutant("v1-version-by-client-info", ("ACP-INIT-002",), {"version-exact": "initialization.mdx#version-negotiation"}),
    Mutant(
        "v1-terminal-auth",
        ("ACP-AUTH-002",),
        {"terminal-auth": "ACP1-013"},
        {"auth-method-ids": "pass", **NO_AUTH_METHOD_NOW},
        why=_WHY_AUTH,
    ),
    Mutant(
        "v1-duplicate-auth-ids",
        ("ACP-AUTH-001",),
        {"auth-method-ids": "schema:AuthMethod"},
        {"auth-methods": "pass", **NO_AUTH_METHOD_NOW},
        why=_WHY_AUTH,
    ),
    Mutant(
        "v1-no-authenticate",
        (),
        {"auth-methods": "authentication.mdx#advertising-authentication"},
        {"auth-method-ids": "pass", **NO_AUTH_METHOD_NOW},
        why=_WHY_AUTH,
    ),
    Mutant(
        "v1-login-ineffective",
        ("ACP-AUTH-003",),
        {"auth-login": "authentication.mdx"},
        {"auth-methods": "pass", "auth-method-ids": "pass", **NO_AUTH_METHOD_NOW},
        why="a login that does not work leaves no session to check: every check that needs one is not run",
        auth="reference-login",
        login_blocks=True,
        alone=True,
    ),
    Mutant(
        "v1-session-needs-login",
        ("ACP-AUTH-005",),
        {"login-not-required": "authentication.mdx"},
        why="an agent that wants a login it does not offer leaves no session to check",
        login_blocks=True,
        alone=True,
    ),
    Mutant(
        "v1-bad-new-session",
        ("ACP-SESSION-001", "ACP-SCHEMA-001"),
        {"session-new": "schema:NewSessionResponse", "message-schema": "schema:AgentResponse"},
        why="the session/new answer is a message of the basic exchange message-schema validates",
    ),
    Mutant(
        "v1-reuse-empty-session", ("ACP-SESSION-002",), {"distinct-session-ids": "session-setup.mdx#creating-a-session"}
    ),
    Mutant("v1-refuse-additional-dirs", ("ACP-ADDDIRS-001",), {"additional-directories": "session-setup.mdx"}),
    Mutant("v1-list-needs-cwd", ("ACP-LIST-001",), {"session-list": "session-list.mdx"}, hook="session/list"),
    Mutant("v1-list-prefix-cwd", (), {"list-cwd-filter": "session-list.mdx"}, hook="session/list"),
    Mutant(
        "v1-list-empty-null",
        ("ACP-LIST-002",),
        {"list-empty": "session-list.mdx", "delete-removes": "session-list.mdx"},
        why="delete-removes lists a directory whose one session it deleted: no session matches there either",
        hook="session/list",
    ),
    Mutant(
        "v1-delete-bad-result",
        ("ACP-DELETE-001",),
        {"session-delete": "schema:DeleteSessionResponse"},
        hook="session/delete",
    ),
    Mutant("v1-delete-keeps", (), {"delete-removes": "session-delete.mdx"}, hook="session/delete"),
    Mutant(
        "v1-delete-unknown-error", ("ACP-DELETE-002",), {"delete-unknown": "session-delete.mdx"}, hook="session/delete"
    ),
    Mutant(
        "v1-bad-stop-reason",
        ("ACP-PROMPT-001", "ACP-PROMPTCAP-003", "ACP-META-001"),
        {
            "prompt-turn": "prompt-turn.mdx#stop-reasons",
            "prompt-embedded": "prompt-turn.mdx#stop-reasons",
            "meta-accepted": "prompt-turn.mdx#stop-reasons",
            "permission-request": "prompt-turn.mdx#stop-reasons",
        },
        why="every check whose turn must end with a v1 stop reason fails with it (those kit ids ask the same)",
    ),
    Mutant(
        "v1-foreign-session-update", ("ACP-PROMPT-002",), {"turn-updates": "prompt-turn.mdx#3-agent-reports-output"}
    ),
    Mutant("v1-refuse-resource-link", ("ACP-PROMPT-003",), {"baseline-content": "ACP1-023"}),
    Mutant(
        "v1-image-unsupported",
        ("ACP-PROMPTCAP-001",),
        {"prompt-image": "schema:PromptCapabilities"},
    ),
    Mutant(
        "v1-audio-unsupported",
        ("ACP-PROMPTCAP-002",),
        {"prompt-audio": "schema:PromptCapabilities"},
    ),
    Mutant("v1-embedded-refused", ("ACP-PROMPTCAP-003",), {"prompt-embedded": "schema:PromptCapabilities"}),
    Mutant("v1-bad-permission", (), {"permission-request": "schema:RequestPermissionRequest"}),
    Mutant(
        "v1-bad-tool-kind",
        (),
        {"tool-call": "schema:ToolKind"},
        moves={"permission-asked": "n/a"},
        why="the edit tool call's kind is no longer edit, so permission-asked sees no acting tool call to judge",
    ),
    Mutant("v1-bad-plan-priority", (), {"plan": "schema:PlanEntry"}),
    Mutant(
        "v1-cancel-as-error",
        ("ACP-CANCEL-001",),
        {"cancel-turn": "ACP1-017", "cancel-permission": "ACP1-017"},
        why="both cancellation checks observe ACP-CANCEL-001",
        hook="cancelled prompt",
    ),
    Mutant(
        "v1-updates-after-cancel",
        ("ACP-CANCEL-002",),
        {"cancel-updates-first": "prompt-turn.mdx#cancellation"},
        hook="cancelled prompt",
    ),
    Mutant("v1-load-bad-result", ("ACP-LOAD-001",), {"session-load": "schema:LoadSessionResponse"}, hook="load answer"),
    Mutant(
        "v1-no-replay",
        (),
        {"load-replay": "session-setup.mdx#loading-sessions"},
        {"load-replay-first": "n/a"},
        why="with nothing replayed, load-replay-first has no replay to put in order",
        hook="load replay",
    ),
    Mutant(
        "v1-replay-after-answer",
        ("ACP-LOAD-002",),
        {
            "load-replay-first": "session-setup.mdx#loading-sessions",
            "load-replay": "session-setup.mdx#loading-sessions",
        },
        why="a replay after the answer is no replay before it, which load-replay requires",
        hook="load replay",
    ),
    Mutant("v1-load-null", ("ACP-LOAD-003",), {"load-result-object": "schema:LoadSessionResponse"}, hook="load answer"),
    Mutant("v1-resume-needs-mcp", ("ACP-RESUME-001",), {"session-resume": "schema:ResumeSessionRequest"}),
    Mutant("v1-resume-replays", ("ACP-RESUME-002",), {"resume-no-replay": "session-setup.mdx#resuming-sessions"}),
    Mutant("v1-close-idle-fails", ("ACP-CLOSE-001",), {"session-close": "session-setup.mdx#closing-active-sessions"}),
    Mutant(
        "v1-close-busy-error",
        ("ACP-CLOSE-002",),
        {"close-busy": "session-setup.mdx#closing-active-sessions"},
        hook="cancelled prompt",
    ),
    # A read with a relative path fails, so an edit (which reads each file before writing it) never writes: the
    # modes that judge what the edit writes do not share its run.
    Mutant("v1-relative-fs-path", (), {"client-fs": "overview.mdx"}, hook="fs reads"),
    Mutant("v1-foreign-terminal", (), {"client-terminals": "terminals.mdx"}),
    Mutant("v1-fs-unasked", ("ACP-CLIENTCAP-001",), {"fs-gated": "file-system.mdx#checking-support"}),
    Mutant("v1-terminal-unasked", ("ACP-CLIENTCAP-002",), {"terminal-gated": "terminals.mdx#checking-support"}),
    Mutant("v1-elicit-unasked", ("ACP-CLIENTCAP-003",), {"elicitation-gated": "elicitation.mdx#checking-support"}),
    Mutant("v1-bad-current-mode", ("ACP-MODES-001",), {"modes-state": "session-modes.mdx"}),
    Mutant("v1-set-mode-fails", ("ACP-MODES-002",), {"session-modes": "session-modes.mdx#from-the-client"}),
    Mutant("v1-bad-config-value", ("ACP-CONFIG-001",), {"config-values": "session-config-options.mdx"}),
    Mutant(
        "v1-boolean-option",
        ("ACP-CONFIG-003",),
        {"boolean-options": "session-config-options.mdx#boolean-config-options"},
    ),
    Mutant(
        "v1-partial-config-answer",
        ("ACP-CONFIG-002",),
        {"config-options": "session-config-options.mdx#from-the-client"},
    ),
    Mutant("v1-unknown-method-code", ("ACP-JSONRPC-004",), {"unknown-method": "schema:ErrorCode(-32601)"}),
    Mutant("v1-drop-ext-requests", ("ACP-EXT-001",), {"ext-method": "extensibility.mdx#custom-requests"}),
    Mutant("v1-invalid-params-code", (), {"invalid-params": "schema:ErrorCode(-32602)"}),
    Mutant("v1-wedge-after-bad-params", ("ACP-JSONRPC-005",), {"usable-after-error": "overview.mdx#error-handling"}),
    Mutant("v1-multiline-errors", ("ACP-ERROR-001",), {"error-messages": "schema:Error"}),
    Mutant("v1-reject-meta", ("ACP-META-001",), {"meta-accepted": "extensibility.mdx#the-_meta-field"}),
    Mutant("v1-root-field", ("ACP-SCHEMA-002",), {"custom-root-fields": "extensibility.mdx#the-_meta-field"}),
    # Beyond the kit (modes of both fronts, BEYOND_KIT_MODES): the checks of no kit id that the v1 set has too.
    Mutant("act-after-reject", (), {"permission-refused": "tool-calls.mdx#permission-options"}, hook="fs reads"),
    Mutant(
        "edit-unasked",
        (),
        {"permission-asked": "tool-calls.mdx#requesting-permission"},
        moves={"permission-refused": "n/a"},
        why="an edit that never asks leaves permission-refused no request to refuse",
        hook="fs reads",
    ),
    Mutant("late-version", (), {"pipelined-session-new": "extensibility.mdx"}),
)

BEYOND_KIT_MODES = ("junk-stdout", "act-after-reject", "edit-unasked", "late-version")
"""Modes of the reference agent's ``BROKEN_MODES`` (both fronts, not ``v1-``) that the table holds too: the
framing defect, and the defects of the checks beyond the kit (refused means refused, pipelined requests)."""

_RECORD = "no mode can fail it: the check only records what the agent did (the kit never asserts it either)"
UNREACHABLE: dict[str, str] = {
    "ACP-AUTH-004": "not run: logout may revoke the operator's own credentials, so no check calls it",
    "ACP-STDERR-001": _RECORD,
    "ACP-INFO-PARSE-001": _RECORD,
    "ACP-INFO-INVALIDREQ-001": _RECORD,
    "ACP-INFO-UNKNOWNSESSION-001": _RECORD,
    "unsupported-content": "always n/a: v1 leaves block types the agent did not advertise to the agent",
}
"""Kit ids (and checks without one) no mutant can turn FAIL, and why."""


def mutation_table() -> str:
    """docs/conformance.md's v1 mutation table: each kit id of the v1 registry (the kit's order), its checks and the
    modes that fail it, or why none can; then the checks that map to no kit id."""
    by_id: dict[str, list[str]] = {}
    by_check: dict[str, list[str]] = {}
    for m in MUTANTS:
        for kit_id in m.kit:
            by_id.setdefault(kit_id, []).append(m.mode)
        for check_id in m.fails:
            by_check.setdefault(check_id, []).append(m.mode)
    lines = ["| kit id | check | broken mode that fails it |", "|---|---|---|"]
    for row in kit_rows(1):
        checks = ", ".join(f"`{c}`" for c in row.checks) or "-"
        modes = ", ".join(f"`{mode}`" for mode in by_id.get(row.id, ()))
        lines.append(f"| {row.id} | {checks} | {modes or UNREACHABLE.get(row.id, '-')} |")
    mapped = {r for entry in CLASSIFICATIONS[1].values() for r in entry.requirements}
    for c in CHECK_SETS[1]:
        if not CLASSIFICATIONS[1][c.id].requirements:
            modes = ", ".join(f"`{mode}`" for mode in by_check.get(c.id, ()))
            lines.append(f"| - | `{c.id}` | {modes or UNREACHABLE.get(c.id, '-')} |")
    assert mapped <= set(KIT[1])
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - a helper for editing the docs
    print(mutation_table())
