"""The reference agent's broken variants for protocol v2 (``--broken MODE``): each breaks one rule a conformance
check judges, so a runner's claims can be tested against an agent known to break exactly that rule.

They act on stdio (the ``--listen`` server has its own, ``remote_modes.REMOTE_BROKEN_MODES``). Three kinds, by
where the defect lives: on the wire (``faults``: a message changed, dropped, held back or
added on its way), in the agent's handlers (``variants``), and in batch handling (``batches.BATCH_MODES``). The
descriptions name the official kit's id (``ACP-...``) or the rule (``ACP2-NNN``) each one breaks.
"""

from __future__ import annotations

from .batches import BATCH_MODES

__all__ = ["SERVER_MODES", "V2_BROKEN_MODES", "WIRE_MODES"]

WIRE_MODES: dict[str, str] = {
    # transport and JSON-RPC
    "invalid-utf8": "write a notification holding a byte that is not UTF-8 at each prompt (ACP-TRANSPORT-002)",
    "multiline-json": "write a notification spread over several lines at each prompt (ACP-TRANSPORT-203)",
    "stop-after-invalid-request": "exit when a request without a method arrives (ACP-JSONRPC-005)",
    "numeric-string-ids": "answer a request whose id is a numeric string with the id as a number (ACP-JSONRPC-001)",
    "error-with-result": 'give every error response a "result": null as well (ACP-JSONRPC-002)',
    "multiline-error-messages": "give every error message a second line (ACP-ERROR-001)",
    "wrong-unknown-code": "answer unknown methods with -32603 instead of -32601 (ACP-JSONRPC-004)",
    "ignore-custom-requests": "answer no _-prefixed request (the runner's barrier excepted) (ACP-EXT-001)",
    "answer-notifications": "answer unknown notifications with an error whose id is null (ACP-EXT-201)",
    "answer-cancel": "answer session/cancel with an error whose id is null (ACP-CANCEL-205)",
    "answer-stale-cancel-request": "answer $/cancel_request for an already answered id (ACP2-002)",
    # initialization
    "initialize-error": "answer initialize with an error (ACP-INIT-001)",
    "version-string": 'answer initialize with protocolVersion "2", a string (ACP-INIT-201)',
    "echo-version": "answer a request for a version above 2 with that version (ACP-INIT-003)",
    "bad-downgrade": "answer a request for version 1 with version 2 (initialization.mdx#version-negotiation)",
    "empty-agent-version": "answer initialize with an empty info.version (ACP-INIT-203)",
    "bad-info-title": "answer initialize with a number for info.title (ACP-SCHEMA-001)",
    "vendor-capability": "advertise a vendor capability at the root of capabilities, not in _meta (ACP-EXT-202)",
    # sessions
    "command-without-description": "list a command without its required description on session/new (ACP-SESSION-001)",
    "command-with-space": "name a command with a space in it on session/new (ACP2-038)",
    "extra-root-key": "put an unknown key at the root of the session/new result (ACP-SCHEMA-002)",
    "list-unfiltered-fails": "answer session/list without a cwd filter with an error (ACP-LIST-201)",
    "list-relative-cwd": "list sessions with a relative cwd when session/list is not filtered (ACP-LIST-204)",
    "delete-null-result": "answer session/delete with a null result (ACP-DELETE-201)",
    "reject-empty-mcp-list": "reject session/new with mcpServers: [] (ACP-SESSION-203)",
    "reject-additional-directories": "reject session/new with additionalDirectories (ACP-ADDDIRS-201)",
    "reject-resume-directories": "reject session/resume with additionalDirectories (ACP-ADDDIRS-202)",
    "invalid-params-wrong-code": "answer session/new with a cwd that is no string with -32603 "
    "(schema:ErrorCode(-32602))",
    # prompt turn
    "same-message-id": "give every prompt of a session the same messageId (ACP-PATCH-203)",
    "user-message-wrong-id": "report the inserted user message live under another id than the response's "
    "(ACP-PROMPT-203)",
    "empty-chunk-message-id": "send agent message chunks with an empty messageId (ACP-PATCH-201)",
    "bad-update": "send an agent message chunk whose text block has no text at each prompt (ACP-PROMPT-205)",
    "no-running": "leave out the running state_update that starts a turn (ACP-STATE-201)",
    "late-running": "send the running state_update that starts a turn after the turn's first update (ACP2-050)",
    "no-idle-after-turn": "leave out the idle state_update that ends a turn normally (ACP-STATE-202)",
    "unknown-stop-reason": 'end turns with stopReason "done" instead of end_turn (ACP-STATE-203)',
    "reject-resource-link": "reject prompts with a resource_link block (ACP-PROMPT-003)",
    "reject-prompt-meta": "reject prompts that carry _meta (ACP-META-001)",
    "reject-embedded-context": "reject prompts with an embedded resource although advertised (ACP-PROMPTCAP-003)",
    "reject-image": "with --all-capabilities: reject prompts with an image although advertised (ACP-PROMPTCAP-001)",
    "reject-audio": "with --all-capabilities: reject prompts with audio although advertised (ACP-PROMPTCAP-002)",
    "unknown-update-kind": 'send an update of kind "progress" (not _-prefixed) at each prompt (ACP-ENUM-202)',
    "fs-call": "call fs/read_text_file, a v1 method v2 does not have, at each prompt (ACP-CLIENTCAP-202)",
    "elicit-unadvertised": "send elicitation/create at each prompt, not advertised by the client (ACP-CLIENTCAP-201)",
    # permissions and tools
    "empty-permission-title": "ask for permission with an empty title (ACP-PERM-201)",
    "string-meta": "send _meta as a string on permission requests (ACP-META-201)",
    "no-requires-action": "leave out requires_action while waiting for a permission answer (ACP-PATCH-209)",
    "exit-on-custom-outcome": "exit when a permission answer has a _-prefixed outcome (ACP-ENUM-203)",
    "approve-unknown-option": "treat a permission answer with an option never offered as the allow option (ACP2-087)",
    "tool-chunk-without-id": "send tool call content chunks with an empty toolCallId (ACP-PATCH-204)",
    "untitled-tool-call": "send tool call updates without a title (ACP-PATCH-208)",
    "unknown-tool-kind": 'report tool calls of kind "fetching" (not _-prefixed) (ACP-ENUM-201)',
    "relative-diff-path": "report the paths of a tool call's diff relative, not absolute (schema:Diff)",
    "plan-without-id": "send plans with an empty planId (ACP-PATCH-205)",
    "unknown-plan-type": 'send plans of type "gantt" (not _-prefixed) (agent-plan.mdx)',
    "relative-terminal-cwd": "report a relative cwd for agent-owned terminals (ACP-PATCH-206)",
    "terminal-output-not-base64": "send terminal output chunks that are not base64 (ACP-PATCH-207)",
    # cancellation
    "cancel-idle-no-reason": "end a cancelled turn with an idle update without stopReason (ACP-CANCEL-201)",
    "cancel-ends-error": "end a cancelled turn with stopReason error (ACP-CANCEL-203)",
    "cancel-aborted": 'end a cancelled turn with stopReason "aborted" (not _-prefixed) (ACP-CANCEL-207)',
    "update-after-cancel": "send a message chunk after the idle update that ends a cancelled turn (ACP-CANCEL-202)",
    "ignore-cancel-meta": "ignore session/cancel when it carries _meta (ACP-CANCEL-206)",
    "cancel-keeps-permission": "ignore session/cancel while a permission request is pending (ACP2-091)",
    "ignore-cancel-request": "ignore $/cancel_request from the client (ACP2-001)",
    # close and resume
    "close-null-result": "answer session/close with a null result (ACP-CLOSE-201)",
    "resume-bad-result": "answer session/resume with availableCommands that are no array (ACP-RESUME-201)",
    "resume-no-state": "send no state_update during session/resume (ACP2-039)",
    "replay-after-response": "replay a resumed session's history after the session/resume response (ACP-RESUME-202)",
    "replay-new-message-ids": "replay user messages under new message ids (ACP-RESUME-204)",
    # config options
    "config-option-nameless": "list config options without their name on session/new (ACP-CONFIG-201)",
    "config-current-not-offered": "give a select option a currentValue it does not offer (ACP-CONFIG-204)",
    "config-list-incomplete": "leave an option out of the session/set_config_option answer (ACP-CONFIG-202)",
    "resume-config-nameless": "list config options without their name on session/resume (ACP-CONFIG-203)",
    # background work
    "background-omitted": "leave background out of the second state_update that lists it (ACP2-042)",
}

SERVER_MODES: dict[str, str] = {
    "login-required-without-methods": "refuse session/new with -32000 while advertising no auth method (ACP-AUTH-205)",
    "auth-login-missing": "with --all-capabilities: advertise auth methods but answer auth/login -32601 (ACP-AUTH-204)",
    "duplicate-auth-ids": "with --all-capabilities: advertise two auth methods with one methodId (ACP-AUTH-201)",
    "unknown-auth-type": 'with --all-capabilities: advertise an auth method of type "password" (ACP-AUTH-206)',
    "terminal-auth-ungated": "with --all-capabilities: advertise terminal auth to clients that did not enable it "
    "(ACP-AUTH-202)",
    "duplicate-terminal-env": "with --all-capabilities: repeat a variable name in the terminal auth method's env "
    "(ACP-AUTH-207)",
    "reuse-idle-session": "answer session/new for the directory of the last new session, not prompted yet, with "
    "that session again (ACP-SESSION-002)",
    "list-empty-not-empty": "list every session when the cwd filter matches none (ACP-LIST-202)",
    "list-prefix-cwd": "list the sessions of subdirectories too when filtering by cwd (ACP-LIST-203)",
    "delete-keeps-listing": "keep listing deleted sessions (ACP-DELETE-202)",
    "delete-twice-fails": "answer session/delete of an unknown session with -32002 (ACP-DELETE-203)",
    "accept-unknown-mcp": "accept MCP servers of any transport (ACP2-066)",
    "accept-image": "accept image prompts without advertising them (ACP2-012)",
    "error-turn-answers-error": "answer a prompt whose work fails (/fail) with an error once inserted (ACP2-065)",
    "prompt-after-close": "take prompts for a closed session (schema:CloseSessionRequest)",
    "close-without-cancel": "answer session/close of a busy session at once, before its cancelled idle (ACP-CLOSE-202)",
    "close-drops-held": "leave the prompts held by a closed session unanswered (ACP2-076)",
    "cancel-keeps-held": "insert the prompts held while busy after session/cancel instead of -32800 "
    "(schema:CancelSessionNotification)",
    "resume-replays-always": "replay history on session/resume without replayFrom (ACP-RESUME-203)",
    "ignore-replay-cursor": "resume without replay when the replay cursor is unknown (ACP2-070)",
    "config-not-applied": "answer session/set_config_option without applying the value (ACP2-080)",
    "config-accepts-unknown": "accept session/set_config_option for an unknown configId (ACP2-081)",
    "partial-config-update": "send a config_option_update listing one option only at each prompt (ACP-CONFIG-206)",
    "ignore-stdin-eof": "keep running after stdin ends (ACP-SHUTDOWN-001)",
}

V2_BROKEN_MODES: dict[str, str] = {**WIRE_MODES, **SERVER_MODES, **BATCH_MODES}
"""Every v2 broken mode beyond the first five (``server.BROKEN_MODES``), with what it breaks."""
