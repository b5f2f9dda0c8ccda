"""What the wire-level broken modes (``faults``) do to single messages the reference agent writes: answers by the
method they answer, and ``session/update`` notifications by their kind. Pure functions on plain JSON values; the
state that spans messages (sessions, turns, resumes) is ``faults.FaultyWire``'s."""

from __future__ import annotations

import os
from typing import Any

__all__ = ["change_error", "change_result", "change_update", "permission_request"]

_NULL_RESULT = {"session/delete": "delete-null-result", "session/close": "close-null-result"}  # method -> mode


def change_result(modes: frozenset[str], method: str, params: dict[str, Any], result: Any) -> Any:
    """The result the client gets for a ``method`` request with ``params`` instead of ``result``."""
    if not isinstance(result, dict):
        return result
    if method == "initialize":
        return _initialize(modes, params, result)
    if method == "session/new":
        return _new_session(modes, result)
    if method == "session/list" and "list-relative-cwd" in modes and not params.get("cwd"):
        for info in result.get("sessions") or []:
            if isinstance(info, dict) and isinstance(info.get("cwd"), str):
                info["cwd"] = os.path.basename(info["cwd"]) or "."
    elif _NULL_RESULT.get(method) in modes:
        return None
    elif method == "session/resume":
        if "resume-bad-result" in modes:
            result["availableCommands"] = "none"
        if "resume-config-nameless" in modes:
            _nameless(result.get("configOptions"))
    elif method == "session/set_config_option" and "config-list-incomplete" in modes:
        options = [o for o in result.get("configOptions") or [] if isinstance(o, dict)]
        kept = [o for o in options if o.get("configId") == params.get("configId")]
        result["configOptions"] = kept or options[1:]
    elif method == "session/prompt" and "same-message-id" in modes:
        result["messageId"] = "msg-same"
    return result


def _initialize(modes: frozenset[str], params: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    if "version-string" in modes:
        result["protocolVersion"] = str(result.get("protocolVersion"))
    requested = params.get("protocolVersion")
    if "echo-version" in modes and isinstance(requested, int) and requested > 2:
        result["protocolVersion"] = requested
    info = result.get("info")
    if isinstance(info, dict):
        if "empty-agent-version" in modes:
            info["version"] = ""
        if "bad-info-title" in modes:
            info["title"] = 7
    caps = result.get("capabilities")
    if "vendor-capability" in modes and isinstance(caps, dict):
        caps["acmeTelemetry"] = {"enabled": True}
    return result


def _new_session(modes: frozenset[str], result: dict[str, Any]) -> dict[str, Any]:
    commands = [c for c in result.get("availableCommands") or [] if isinstance(c, dict)]
    if commands and "command-without-description" in modes:
        commands[0].pop("description", None)
    if commands and "command-with-space" in modes:
        commands[0]["name"] = "run tests"
    if "extra-root-key" in modes:
        result["sessionKind"] = "scratch"
    if "config-option-nameless" in modes:
        _nameless(result.get("configOptions"))
    if "config-current-not-offered" in modes:
        for option in result.get("configOptions") or []:
            if isinstance(option, dict) and option.get("type") == "select":
                option["currentValue"] = "not-offered"
                break
    return result


def _nameless(options: Any) -> None:
    for option in options if isinstance(options, list) else []:
        if isinstance(option, dict):
            option.pop("name", None)


def change_error(modes: frozenset[str], error: Any) -> Any:
    if not isinstance(error, dict):
        return error
    if "wrong-unknown-code" in modes and error.get("code") == -32601:
        error["code"] = -32603
    if "multiline-error-messages" in modes and isinstance(error.get("message"), str):
        error["message"] += "\n(see the agent's log for details)"
    return error


def permission_request(modes: frozenset[str], params: dict[str, Any]) -> None:
    if "empty-permission-title" in modes:
        params["title"] = ""
    if "string-meta" in modes:
        params["_meta"] = "reference-agent"


def change_update(modes: frozenset[str], update: dict[str, Any], *, resuming: bool) -> None:
    """Change one update in place (the ones whose change depends on no other message)."""
    kind = update.get("sessionUpdate")
    if kind in ("user_message", "user_message_chunk") and isinstance(update.get("messageId"), str):
        if "same-message-id" in modes:
            update["messageId"] = "msg-same"
        elif "user-message-wrong-id" in modes and not resuming:
            update["messageId"] += "-live"
        elif "replay-new-message-ids" in modes and resuming:
            update["messageId"] += "-replayed"
    elif kind == "agent_message_chunk" and "empty-chunk-message-id" in modes:
        update["messageId"] = ""
    elif kind == "tool_call_update":
        if "untitled-tool-call" in modes:
            update.pop("title", None)
        if "unknown-tool-kind" in modes and "kind" in update:
            update["kind"] = "fetching"
    elif kind == "tool_call_content_chunk" and "tool-chunk-without-id" in modes:
        update["toolCallId"] = ""
    if kind in ("tool_call_update", "tool_call_content_chunk") and "relative-diff-path" in modes:
        content = update.get("content")
        for item in content if isinstance(content, list) else [content]:
            for change in item.get("changes") or [] if isinstance(item, dict) else []:
                if isinstance(change, dict) and isinstance(change.get("path"), str):
                    change["path"] = os.path.basename(change["path"])
    elif kind == "plan_update" and isinstance(update.get("plan"), dict):
        if "plan-without-id" in modes:
            update["plan"]["planId"] = ""
        if "unknown-plan-type" in modes:
            update["plan"]["type"] = "gantt"
    elif kind == "terminal_update" and "relative-terminal-cwd" in modes and isinstance(update.get("cwd"), str):
        update["cwd"] = os.path.basename(update["cwd"]) or "."
    elif kind == "terminal_output_chunk" and "terminal-output-not-base64" in modes:
        update["data"] = "%% not base64 %%"
