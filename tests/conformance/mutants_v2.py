"""The v2 mutation table: for each broken variant of the reference agent (``acp-reference-agent --broken MODE``),
the official kit's ids and the checks it must turn FAIL, and what else may move because of it.

``test_mutants_v2_runs_*.py`` run every mode and hold it to its row; docs/conformance.md carries the table rendered
by ``mutation_table`` (``python -m tests.conformance.mutants_v2`` prints it). A row fails more than one id only
where the ids' texts overlap (one defect breaks both by nature) or the kit itself counts one observation twice;
``skips`` are the ids whose observation needs what the mode breaks (they turn SKIPPED: nothing left to judge).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

__all__ = ["MUTANTS", "Mutant", "mutation_table"]


@dataclass(frozen=True)
class Mutant:
    fails: tuple[str, ...]  # kit ids (ACP-...) and check ids that turn FAIL
    skips: tuple[str, ...] = ()  # kit ids and checks left with nothing to observe (SKIPPED)
    wide: bool = False  # run against acp-reference-agent --all-capabilities (auth methods, image and audio)
    blocks: str | None = None  # "startup" / "login": the run stops there, every other row is NOT_TESTED
    why: str = ""  # why more than one kit id moves


def M(*fails: str, skips: tuple[str, ...] = (), wide: bool = False, blocks: str | None = None, why: str = "") -> Mutant:
    return Mutant(tuple(fails), skips, wide, blocks, why)


_SAME_DEFECT = "one defect breaks both texts"
MUTANTS: dict[str, Mutant] = {
    # transport
    "junk-stdout": M("ACP-TRANSPORT-201", "framing"),
    "invalid-utf8": M("ACP-TRANSPORT-002", "stdout-utf8"),
    "multiline-json": M(
        "ACP-TRANSPORT-203",
        "one-line-messages",
        "ACP-TRANSPORT-201",
        "framing",
        why="a message spread over lines is also lines that are no JSON (ACP-TRANSPORT-201)",
    ),
    "batch-empty-array": M("ACP-BATCH-201", "batch-empty"),
    "batch-answer-notifications": M("ACP-BATCH-202", "batch-notifications"),
    "batch-unwrapped": M("ACP-BATCH-204", "batch-requests"),
    "batch-drop-invalid": M("ACP-BATCH-203", "batch-invalid-entries"),
    "stop-after-invalid-request": M("ACP-JSONRPC-005", "connection-survives"),
    "ignore-stdin-eof": M("ACP-SHUTDOWN-001", "stdin-eof-exit"),
    # initialization
    "initialize-error": M("ACP-INIT-001", "initialize", blocks="startup"),
    "version-string": M("ACP-INIT-201", "protocol-version", blocks="startup"),
    "empty-agent-version": M("ACP-INIT-203", "agent-info"),
    "boolean-capability": M(
        "ACP-INIT-204",
        "capability-markers",
        "ACP-SCHEMA-001",
        "initialize-schema",
        why="a boolean marker is also a schema violation; the kit keeps ACP-INIT-204 as a row of its own for it",
    ),
    "bad-info-title": M("ACP-SCHEMA-001", "initialize-schema"),
    "vendor-capability": M("ACP-EXT-202", "capability-extensions"),
    "echo-version": M("ACP-INIT-003", "version-negotiation"),
    "bad-downgrade": M("version-too-old"),
    "auth-login-missing": M("ACP-AUTH-204", "auth-methods", wide=True),
    "duplicate-auth-ids": M("ACP-AUTH-201", "auth-method-ids", wide=True),
    "unknown-auth-type": M("ACP-AUTH-206", "auth-method-types", wide=True),
    "terminal-auth-ungated": M("ACP-AUTH-202", "terminal-auth-gated", wide=True),
    "duplicate-terminal-env": M("ACP-AUTH-207", "terminal-auth-methods", wide=True),
    "login-required-without-methods": M("ACP-AUTH-205", "login-without-methods", blocks="login"),
    # sessions
    "command-without-description": M("ACP-SESSION-001", "session-new"),
    "reuse-idle-session": M("ACP-SESSION-002", "session-ids-distinct"),
    "command-with-space": M("available-commands"),
    "list-unfiltered-fails": M("ACP-LIST-201", "session-list"),
    "list-empty-not-empty": M("ACP-LIST-202", "session-list-empty"),
    "list-prefix-cwd": M("ACP-LIST-203", "session-list-cwd"),
    "list-relative-cwd": M("ACP-LIST-204", "session-list-absolute"),
    "delete-null-result": M("ACP-DELETE-201", "session-delete"),
    "delete-keeps-listing": M("ACP-DELETE-202", "session-delete-unlisted"),
    "delete-twice-fails": M("ACP-DELETE-203", "session-delete-again"),
    "accept-unknown-mcp": M("unsupported-mcp"),
    "reject-empty-mcp-list": M("ACP-SESSION-203", "optional-forms"),
    "reject-additional-directories": M("ACP-ADDDIRS-201", "additional-directories"),
    "reject-resume-directories": M("ACP-ADDDIRS-202", "resume-additional-directories"),
    # prompt turn
    "no-message-id": M(
        "ACP-PROMPT-201",
        "prompt-accepted",
        "close-held-prompts",
        skips=(
            "ACP-PATCH-203",
            "message-ids-distinct",
            "ACP-PROMPT-203",
            "user-message-echo",
            "ACP-RESUME-204",
            "resume-message-ids",
        ),
        why="close-held-prompts (ACP2-077) wants the same messageId; the checks comparing messageIds have none",
    ),
    "same-message-id": M("ACP-PATCH-203", "message-ids-distinct"),
    "user-message-wrong-id": M("ACP-PROMPT-203", "user-message-echo"),
    "empty-chunk-message-id": M("ACP-PATCH-201", "message-ids"),
    "bad-update": M("ACP-PROMPT-205", "update-schema"),
    "unknown-update-kind": M("ACP-ENUM-202", "update-kinds-known"),
    "no-running": M("ACP-STATE-201", "running-before-idle"),
    "late-running": M("turn-lifecycle"),
    "no-idle-after-turn": M(
        "ACP-STATE-202",
        "turn-ends-idle",
        "ACP-PERM-201",
        "permission-request",
        skips=("ACP-STATE-201", "running-before-idle", "ACP-STATE-203", "stop-reason", "turn-lifecycle"),
        why="ACP-PERM-201 wants the turn to reach idle after an allowed permission, as ACP-STATE-202 does",
    ),
    "never-idle": M(
        "ACP-STATE-202",
        "turn-ends-idle",
        "ACP-PERM-201",
        "permission-request",
        "ACP-CANCEL-201",
        "cancel-turn",
        "ACP-CANCEL-206",
        "cancel-with-meta",
        "ACP-CLOSE-202",
        "ACP-CANCEL-208",
        "close-active-work",
        "cancel-permission",
        skips=(
            "ACP-STATE-201",
            "running-before-idle",
            "ACP-STATE-203",
            "stop-reason",
            "turn-lifecycle",
            "scenario-stop-reasons",
            "ACP-CANCEL-202",
            "cancel-nothing-after",
            "ACP-CANCEL-203",
            "cancel-not-error",
            "ACP-CANCEL-207",
            "cancel-stop-reason",
        ),
        why="no idle update at all: every rule about one (turn end, cancel, close) breaks",
    ),
    "unknown-stop-reason": M("ACP-STATE-203", "stop-reason"),
    "error-turn-answers-error": M("scenario-stop-reasons"),
    "reject-resource-link": M("ACP-PROMPT-003", "baseline-content"),
    "accept-image": M("unsupported-content"),
    "reject-image": M("ACP-PROMPTCAP-001", "prompt-image", wide=True),
    "reject-audio": M("ACP-PROMPTCAP-002", "prompt-audio", wide=True),
    "reject-embedded-context": M("ACP-PROMPTCAP-003", "prompt-embedded-context"),
    # permissions and tools
    "empty-permission-title": M("ACP-PERM-201", "permission-request"),
    "no-requires-action": M("ACP-PATCH-209", "permission-requires-action"),
    "exit-on-custom-outcome": M("ACP-ENUM-203", "permission-custom-outcome"),
    "approve-unknown-option": M("permission-flow"),
    "relative-diff-path": M("tool-call"),
    "tool-chunk-without-id": M("ACP-PATCH-204", "tool-call-ids"),
    "untitled-tool-call": M("ACP-PATCH-208", "tool-call-title"),
    "unknown-tool-kind": M(
        "ACP-ENUM-201",
        "open-enums",
        skips=("permission-asked",),
        why="permission-asked looks for edit, delete, move and execute tool calls: a kind it does not know is none",
    ),
    "plan-without-id": M("ACP-PATCH-205", "plan"),
    "unknown-plan-type": M("plan-shape"),
    "relative-terminal-cwd": M("ACP-PATCH-206", "terminal"),
    "terminal-output-not-base64": M("ACP-PATCH-207", "terminal-output"),
    # cancellation
    "cancel-idle-no-reason": M("ACP-CANCEL-201", "cancel-turn"),
    "update-after-cancel": M("ACP-CANCEL-202", "cancel-nothing-after"),
    "cancel-ends-error": M(
        "ACP-CANCEL-203",
        "cancel-not-error",
        "ACP-CANCEL-201",
        "cancel-turn",
        why="ending a cancelled turn as error is not ending it as cancelled (ACP-CANCEL-201)",
    ),
    "cancel-aborted": M(
        "ACP-CANCEL-207",
        "cancel-stop-reason",
        "ACP-CANCEL-201",
        "cancel-turn",
        why="a substitute for cancelled is not cancelled (ACP-CANCEL-201)",
    ),
    "answer-cancel": M(
        "ACP-CANCEL-205",
        "cancel-unanswered",
        "ACP-JSONRPC-003",
        "notifications-unanswered",
        why="session/cancel is a notification: answering it is answering a notification (ACP-JSONRPC-003)",
    ),
    "ignore-cancel-meta": M("ACP-CANCEL-206", "cancel-with-meta"),
    "ignore-cancel": M(
        "ACP-CANCEL-201",
        "cancel-turn",
        "ACP-CANCEL-206",
        "cancel-with-meta",
        "cancel-permission",
        "cancel-held-prompts",
        skips=(
            "ACP-CANCEL-202",
            "cancel-nothing-after",
            "ACP-CANCEL-203",
            "cancel-not-error",
            "ACP-CANCEL-207",
            "cancel-stop-reason",
        ),
        why="session/cancel does nothing at all: every rule about what it does breaks",
    ),
    "cancel-keeps-permission": M("cancel-permission"),
    "ignore-cancel-request": M("held-prompt-cancel-request"),
    "cancel-keeps-held": M("cancel-held-prompts"),
    "answer-stale-cancel-request": M("cancel-request-ignored", "held-prompt-cancel-request"),
    # close and resume
    "close-null-result": M("ACP-CLOSE-201", "close"),
    "prompt-after-close": M("closed-session"),
    "close-without-cancel": M(
        "ACP-CLOSE-202", "ACP-CANCEL-208", "close-active-work", why="the kit counts this one observation twice"
    ),
    "close-drops-held": M("close-held-prompts"),
    "resume-bad-result": M("ACP-RESUME-201", "resume"),
    "resume-no-state": M("resume-state-snapshot"),
    "resume-replays-always": M("ACP-RESUME-203", "resume-no-replay"),
    "replay-after-response": M("ACP-RESUME-202", "resume-replay"),
    "replay-new-message-ids": M("ACP-RESUME-204", "resume-message-ids"),
    "ignore-replay-cursor": M("resume-bad-cursor"),
    # client methods
    "fs-call": M("ACP-CLIENTCAP-202", "client-methods-known"),
    "elicit-unadvertised": M("ACP-CLIENTCAP-201", "no-elicitation-unadvertised"),
    # config options
    "config-option-nameless": M(
        "ACP-CONFIG-201",
        "config-option-shapes",
        "ACP-SESSION-001",
        "session-new",
        why="a config option without its name is also a session/new answer off the schema (ACP-SESSION-001)",
    ),
    "config-current-not-offered": M("ACP-CONFIG-204", "config-current-value"),
    "config-list-incomplete": M("ACP-CONFIG-202", "config-options"),
    "config-not-applied": M("config-set-value"),
    "config-accepts-unknown": M("config-option-errors"),
    "resume-config-nameless": M(
        "ACP-CONFIG-203",
        "resume-config-options",
        "ACP-RESUME-201",
        "resume",
        why="a config option without its name is also a session/resume answer off the schema (ACP-RESUME-201)",
    ),
    "partial-config-update": M("ACP-CONFIG-206", "config-option-update"),
    # errors and extensibility
    "wrong-unknown-code": M("ACP-JSONRPC-004", "unknown-method"),
    "ignore-custom-requests": M(
        "ACP-EXT-001",
        "custom-request-answered",
        "ACP-JSONRPC-004",
        "unknown-method",
        why="an unknown _ method left unanswered gets no -32601 either (ACP-JSONRPC-004)",
    ),
    "answer-notifications": M(
        "ACP-EXT-201",
        "custom-notification-ignored",
        "ACP-JSONRPC-003",
        "notifications-unanswered",
        why="a custom notification answered is a notification answered (ACP-JSONRPC-003)",
    ),
    "invalid-params-wrong-code": M("invalid-params"),
    "reject-prompt-meta": M("ACP-META-001", "meta-accepted"),
    "string-meta": M("ACP-META-201", "meta-objects"),
    "extra-root-key": M("ACP-SCHEMA-002", "no-unknown-root-keys"),
    "numeric-string-ids": M("ACP-JSONRPC-001", "response-ids"),
    "error-with-result": M("ACP-JSONRPC-002", "response-shape"),
    "multiline-error-messages": M("ACP-ERROR-001", "error-messages"),
    # background work
    "background-omitted": M("background-work"),
    # beyond the kit: refused means refused, and pipelined messages in the negotiated version
    "act-after-reject": M("permission-refused"),
    "edit-unasked": M("permission-asked", skips=("permission-refused",)),
    "late-version": M("pipelined-session-new"),
}


def _mode(mode: str) -> str:
    if not mode:
        return "-"
    return f"`{mode}`" + (" (`--all-capabilities`)" if MUTANTS[mode].wide else "")


def mutation_table() -> str:
    """docs/conformance.md's table: each mapped kit id with its check and the mode that fails it, then the checks
    without a kit id."""
    from acp_conformance.runner.kit import kit_rows

    def modes(target: str) -> str:
        return ", ".join(_mode(mode) for mode, mutant in MUTANTS.items() if target in mutant.fails) or "-"

    lines = ["| kit id | check | broken mode that fails it | also moves |", "|---|---|---|---|"]
    for row in kit_rows(2):
        if not row.checks:
            continue
        for mode in [m for m, mutant in MUTANTS.items() if row.id in mutant.fails] or [""]:
            mutant = MUTANTS.get(mode)
            also = ""
            if mutant is not None:
                others = [f for f in mutant.fails if f.startswith("ACP-") and f != row.id]
                parts = [", ".join(others)] if others else []
                parts += (
                    [f"{', '.join(s for s in mutant.skips if s.startswith('ACP-'))} SKIPPED"]
                    if any(s.startswith("ACP-") for s in mutant.skips)
                    else []
                )
                parts += ["every other id NOT_TESTED (the run cannot go on)"] if mutant.blocks == "startup" else []
                parts += (
                    ["every id whose check needs a session NOT_TESTED (blocked by auth)"]
                    if (mutant.blocks == "login")
                    else []
                )
                also = "; ".join(parts) + (f": {mutant.why}" if mutant.why and parts else "")
            checks = ", ".join(f"`{c}`" for c in row.checks)
            lines.append(f"| {row.id} | {checks} | {_mode(mode)} | {also or '-'} |")
    from acp_conformance.runner.checks import CHECK_SETS
    from acp_conformance.runner.registry import in_report_order
    from acp_conformance.runner.tiers import classify

    for check in in_report_order(CHECK_SETS[2]):
        if not classify(2, check.id).requirements:
            lines.append(f"| - | `{check.id}` | {modes(check.id)} | - |")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - a helper for editing the docs
    sys.stdout.write(mutation_table() + "\n")
