"""The reference agent's broken v1 modes by name (``--broken v1-...``), apart from the v1 front that acts on them
(``v1_mutants.py``): the command line lists and checks them at every start, and a v2 client's agent never loads
v1's front and types."""

from __future__ import annotations

from .v1_mutant_wire import V1_WIRE_MODES

__all__ = ["V1_BROKEN_MODES"]

V1_BROKEN_MODES: dict[str, str] = {
    **V1_WIRE_MODES,
    "v1-bad-initialize": "v1: answer initialize with mcpCapabilities as an array, not an object",
    "v1-no-agent-info": "v1: answer initialize without agentInfo",
    "v1-version-by-client-info": "v1: answer a version 1 offer without clientInfo with version 2",
    "v1-echo-version": "v1: answer an offer of a version newer than 1 with that version (the offer echoed)",
    "v1-terminal-auth": "v1: offer a terminal auth method to a client that did not enable terminal auth",
    "v1-duplicate-auth-ids": "v1: advertise two auth methods with the same id",
    "v1-no-authenticate": "v1: advertise an agent auth method, but answer authenticate -32601",
    "v1-login-ineffective": "v1: advertise the agent auth method reference-login; after it, session/new still "
    "answers -32000",
    "v1-session-needs-login": "v1: advertise no auth method, yet answer session/new -32000",
    "v1-bad-new-session": "v1: answer session/new with a _meta that is not an object",
    "v1-bad-commands": "v1: announce the available commands without their (required) description",
    "v1-reuse-empty-session": "v1: a session/new with the cwd of the previous one, which had no prompt yet, gets "
    "that session again",
    "v1-refuse-additional-dirs": "v1: advertise additionalDirectories, but refuse session/new with them (-32602)",
    "v1-bad-current-mode": "v1: report a currentModeId that is none of the available modes",
    "v1-bad-config-value": "v1: report a select config option whose currentValue is none of its values",
    "v1-boolean-option": "v1: report the boolean config option to a client that did not advertise them",
    "v1-set-mode-fails": "v1: answer session/set_mode -32603",
    "v1-partial-config-answer": "v1: answer session/set_config_option without the option it changed",
    "v1-list-needs-cwd": "v1: refuse session/list without a cwd (-32602)",
    "v1-list-prefix-cwd": "v1: filter session/list by cwd prefix (sessions of subdirectories listed too)",
    "v1-list-empty-null": "v1: answer session/list sessions: null when no session matches",
    "v1-delete-bad-result": "v1: answer session/delete with a _meta that is not an object",
    "v1-delete-keeps": "v1: answer session/delete but keep the session",
    "v1-delete-unknown-error": "v1: answer session/delete of an unknown session -32002",
    "v1-bad-stop-reason": "v1: end ordinary turns with stopReason done (not a v1 stop reason)",
    "v1-foreign-session-update": "v1: send an update naming another session during each prompt turn",
    "v1-unasked-notice": "v1: send a notice update to a client that did not advertise session.notices",
    "v1-refuse-resource-link": "v1: refuse prompts with a resource_link block (-32602)",
    "v1-image-unsupported": "v1: advertise promptCapabilities.image, yet refuse image blocks",
    "v1-audio-unsupported": "v1: advertise promptCapabilities.audio, yet refuse audio blocks",
    "v1-embedded-refused": "v1: advertise promptCapabilities.embeddedContext, yet refuse resource blocks",
    "v1-reject-meta": "v1: refuse a prompt that carries _meta (-32602)",
    "v1-root-field": "v1: put a custom field at the root of the prompt result (not in _meta)",
    "v1-bad-permission": "v1: send permission requests whose options have no name",
    "v1-bad-tool-kind": "v1: report tool calls of kind hammer (not a v1 tool kind)",
    "v1-bad-plan-priority": "v1: report plan entries of priority urgent (not a v1 priority)",
    "v1-cancel-as-error": "v1: answer a prompt cancelled by session/cancel with error -32800",
    "v1-updates-after-cancel": "v1: send one more agent message chunk after a cancelled prompt's answer",
    "v1-load-bad-result": "v1: answer session/load with a _meta that is not an object",
    "v1-no-replay": "v1: replay nothing on session/load",
    "v1-replay-after-answer": "v1: replay a loaded session's history after the session/load answer",
    "v1-load-null": "v1: answer session/load with null",
    "v1-resume-needs-mcp": "v1: refuse session/resume without mcpServers (-32602)",
    "v1-resume-replays": "v1: replay the history on session/resume",
    "v1-close-idle-fails": "v1: answer session/close of an idle session -32603",
    "v1-close-busy-error": "v1: answer the prompt of a session closed during its turn with an error",
    "v1-fs-unasked": "v1: call fs/* even when the client did not advertise the fs capability",
    "v1-terminal-unasked": "v1: call terminal/* even when the client did not advertise terminals",
    "v1-elicit-unasked": "v1: call elicitation/create even when the client offered no elicitation mode",
    "v1-relative-fs-path": "v1: read files through fs/read_text_file with a relative path",
    "v1-foreign-terminal": "v1: ask terminal/output of a terminal it did not create",
    "v1-unknown-method-code": "v1: answer unknown methods -32603 (not -32601)",
    "v1-invalid-params-code": "v1: answer session/new with malformed params -32603 (not -32602)",
    "v1-linger": "v1: keep running after stdin is closed (until a signal)",
}
"""``--broken`` modes of the v1 front, each breaking one rule (see docs/conformance.md, the v1 mutation table)."""
