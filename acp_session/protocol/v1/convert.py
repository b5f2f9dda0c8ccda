"""Pure mappings between ACP v1 wire values and the model (v2 types); no state, no I/O.

Most v1 shapes differ from v2 by a few renamed or restructured fields, so a value is mapped on its
plain JSON form (``id`` -> ``configId``, a flat plan -> a ``plan_update``, ...) and then converted into
the model type with the library's lenient decoder, which keeps unknown variants as they came. The one
hot path, a text chunk, is built directly.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any, get_args

import msgspec
from msgspec import UNSET

from ...codec import convert, to_builtins
from ...schema import types as m
from ...schema import unstable as mu
from ...schema.v1 import types as v1
from ...schema.v1 import unstable as v1u
from ...update_kinds import KINDS
from ..base import V1_DIFF_META

__all__ = [
    "V1_DIFF_META",
    "V2_ONLY_UPDATES",
    "agent_capabilities",
    "auth_methods",
    "config_options",
    "content_block",
    "content_block_to_v1",
    "initialize_response",
    "mcp_servers_to_v1",
    "capability_record",
    "offered",
    "permission_request",
    "permission_response_to_v1",
    "session_infos",
    "tool_call",
    "tool_call_update_fields",
    "update_plain",
    "v2_only_kind",
]


_SUPPORTED: dict[str, Any] = {}  # a v2 support marker: an empty object


def _plain(value: Any) -> Any:
    return to_builtins(value)


def offered(flag: Any) -> bool:
    """Whether a v1 capability is offered: ``true``, or an object (v1 mixes booleans and support markers)."""
    return flag is True or isinstance(flag, (dict, msgspec.Struct))


# -- initialize -------------------------------------------------------------------------------------------


def agent_capabilities(caps: v1.AgentCapabilities | msgspec.UnsetType | None) -> m.AgentCapabilities:
    """v1 ``agentCapabilities`` as the model's ``capabilities``.

    The session group is always present: a v1 agent always offers ``session/new`` and ``session/prompt``.
    Which optional methods it offers (load, list, resume, close) the adapter reads from the v1 value.
    """
    if not isinstance(caps, v1.AgentCapabilities):
        caps = v1.AgentCapabilities()
    prompt: dict[str, Any] = {}
    if isinstance(caps.prompt_capabilities, v1.PromptCapabilities):
        pc = caps.prompt_capabilities
        for wire, flag in (("image", pc.image), ("audio", pc.audio), ("embeddedContext", pc.embedded_context)):
            if offered(flag):
                prompt[wire] = {}
    mcp: dict[str, Any] = {"stdio": {}}  # every v1 agent must accept stdio MCP servers
    if isinstance(caps.mcp_capabilities, v1.McpCapabilities) and offered(caps.mcp_capabilities.http):
        mcp["http"] = {}
    session: dict[str, Any] = {"prompt": prompt, "mcp": mcp}
    sc = caps.session_capabilities
    if isinstance(sc, v1.SessionCapabilities):
        if offered(sc.delete):
            session["delete"] = {}
        if offered(sc.additional_directories):
            session["additionalDirectories"] = {}
    plain: dict[str, Any] = {"session": session}
    if caps.meta not in (UNSET, None):
        plain["_meta"] = caps.meta
    return convert(plain, m.AgentCapabilities)


def auth_methods(methods: Iterable[Any]) -> list[Any]:
    """v1 auth methods (``id``, an optional ``type``) as the model's (``methodId``, ``type`` required)."""
    out: list[Any] = []
    for method in methods:
        plain = _plain(method)
        if not isinstance(plain, dict):
            continue
        plain = dict(plain)
        if "id" in plain and "methodId" not in plain:
            plain["methodId"] = plain.pop("id")
        plain.setdefault("type", "agent")
        env = plain.get("env")
        if isinstance(env, dict):  # v1: a map of variables; the model: a list of {name, value}
            plain["env"] = [{"name": k, "value": v} for k, v in env.items()]
        try:
            out.append(convert(plain, m.AuthMethod))
        except msgspec.ValidationError:
            out.append(m.UnknownAuthMethod(plain))  # kept as received, never lost
    return out


def initialize_response(response: v1.InitializeResponse) -> m.InitializeResponse:
    info = response.agent_info
    info_plain = _plain(info) if isinstance(info, v1.Implementation) else {"name": "unknown", "version": "0"}
    methods = response.auth_methods if isinstance(response.auth_methods, list) else []
    return m.InitializeResponse(
        protocol_version=1,
        info=convert(info_plain, m.Implementation),
        capabilities=agent_capabilities(response.agent_capabilities),
        auth_methods=auth_methods(methods),
        meta=response.meta,
    )


def capability_record(model: m.InitializeResponse, preview: Any) -> mu.InitializeResponse:
    """The model answer as the unstable record, with the Preview capabilities a v1 agent advertises in its own
    shape (``sessionCapabilities.fork`` / ``title`` / ``systemPrompt`` / ``archive`` / ``status``,
    ``auth.status``, ``providers``; ``preview`` is the answer decoded with the v1 unstable types) moved to
    where the v2 record has them."""
    plain = to_builtins(model)
    caps = preview.agent_capabilities if isinstance(preview, v1u.InitializeResponse) else None
    if isinstance(caps, v1u.AgentCapabilities):
        record_caps = plain.setdefault("capabilities", {})
        session = record_caps.setdefault("session", {})
        sc = caps.session_capabilities
        if isinstance(sc, v1u.SessionCapabilities):
            for name, wire in (
                ("fork", "fork"),
                ("title", "title"),
                ("system_prompt", "systemPrompt"),
                ("archive", "archive"),
                ("status", "status"),
            ):
                value = getattr(sc, name)
                if offered(value):
                    session[wire] = to_builtins(value)
        auth = caps.auth
        if isinstance(auth, v1u.AgentAuthCapabilities) and offered(auth.status):
            record_caps["auth"] = {"status": to_builtins(auth.status)}
        if offered(caps.providers):
            record_caps["providers"] = to_builtins(caps.providers)
    return convert(plain, mu.InitializeResponse)


# -- content ------------------------------------------------------------------------------------------------


def content_block(block: Any) -> Any:
    """A v1 content block as the model's (the five block types kept their shape)."""
    if type(block) is v1.TextContent and block.annotations is UNSET and block.meta is UNSET:
        return m.TextContent(text=block.text)
    return convert(_plain(block), m.ContentBlock)


def content_block_to_v1(block: Any) -> Any:
    """A model content block in v1's shape (the same JSON; ``icons`` on links is unknown to v1 and dropped)."""
    if type(block) is m.TextContent and block.annotations is UNSET and block.meta is UNSET:
        return v1.TextContent(text=block.text)
    plain = _plain(block)
    if isinstance(plain, dict):
        plain.pop("icons", None)
    return plain


def _diff(plain: dict[str, Any]) -> dict[str, Any]:
    """A v1 diff (one path, old and new text) as a v2 diff: one change plus a git patch, the v1 value in ``_meta``."""
    path = plain.get("path", "")
    old = plain.get("oldText")
    new = plain.get("newText", "")
    operation = "add" if old is None else "modify"
    before = "/dev/null" if old is None else f"a{path}"
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True), new.splitlines(keepends=True), fromfile=before, tofile=f"b{path}"
    )
    header = f"diff --git a{path} b{path}\n" + ("new file mode 100644\n" if old is None else "")
    body = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    meta = dict(plain.get("_meta") or {})
    meta[V1_DIFF_META] = {"path": path, "oldText": old, "newText": new}
    return {
        "type": "diff",
        "changes": [{"operation": operation, "path": path, "fileType": "text"}],
        "patch": {"format": "git_patch", "text": header + body},
        "_meta": meta,
    }


def _tool_content(items: Any) -> Any:
    if not isinstance(items, list):
        return items
    return [_diff(item) if isinstance(item, dict) and item.get("type") == "diff" else item for item in items]


# -- tool calls ---------------------------------------------------------------------------------------------

_TOOL_FIELDS = ("title", "name", "kind", "status", "content", "locations", "rawInput", "rawOutput", "_meta")


def tool_call_update_fields(plain: dict[str, Any]) -> dict[str, Any]:
    """The fields of a v1 ``tool_call`` / ``tool_call_update`` as a v2 ``tool_call_update``.

    v1 gives no meaning to ``null`` in an update, so a null field is left unchanged rather than cleared.
    """
    out: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": plain.get("toolCallId")}
    for key in _TOOL_FIELDS:
        value = plain.get(key)
        if value is not None:
            out[key] = _tool_content(value) if key == "content" else value
    return out


def tool_call(update: Any) -> Any:
    """A v1 ``ToolCallUpdate`` value (as in a permission request) as the model's ``ToolCallUpdate``."""
    plain = tool_call_update_fields(_plain(update))
    plain.pop("sessionUpdate")
    return convert(plain, m.ToolCallUpdate)


# -- session updates (other than chunks, which the adapter maps itself) ------------------------------------


def _command(plain: Any) -> Any:
    if isinstance(plain, dict):
        plain = dict(plain)
        plain.setdefault("type", "command")
        command_input = plain.get("input")
        if isinstance(command_input, dict) and "type" not in command_input and "hint" in command_input:
            plain["input"] = {"type": "text", **command_input}
    return plain


def _config_option(plain: Any) -> Any:
    if not isinstance(plain, dict):
        return plain
    plain = dict(plain)
    if "id" in plain and "configId" not in plain:
        plain["configId"] = plain.pop("id")
    options = plain.get("options")
    if isinstance(options, list):
        plain["options"] = [
            {("groupId" if key == "group" else key): value for key, value in item.items()}
            if isinstance(item, dict) and "group" in item
            else item
            for item in options
        ]
    return plain


def config_options(options: Any) -> list[Any]:
    """v1 config options (``id``, ``group``) as the model's (``configId``, ``groupId``)."""
    if not isinstance(options, list):
        return []
    converted = convert([_config_option(o) for o in _plain(options)], list[m.SessionConfigOption])
    return list(converted)


def _tags(union: Any) -> frozenset[str]:
    return frozenset(str(t.__struct_config__.tag) for t in get_args(union) if hasattr(t, "__struct_config__"))


V2_ONLY_UPDATES: frozenset[str] = (
    frozenset(kind.tag for kind in KINDS) - _tags(v1.SessionUpdate) - _tags(v1u.SessionUpdate)
)
"""Update kinds the model folds that neither v1 schema (stable or unstable) has: ``user_message``,
``state_update``, ``agent_message``, ... A v1 turn's user message and states are the adapter's to report
(from the prompt and its answer), so a v1 agent sending them is ignored rather than folded."""


def v2_only_kind(update: Any) -> str | None:
    """The tag of a v1 update that only v2 has (the v1 decoder kept it raw), else None."""
    if type(update) is v1.UnknownSessionUpdate:
        tag = update.tag
        return tag if tag in V2_ONLY_UPDATES else None
    return None


def update_plain(plain: dict[str, Any], plan_id: str) -> dict[str, Any] | None:
    """A v1 session update (plain JSON, not a chunk) as v2 JSON; None for ``current_mode_update``,
    which the adapter turns into a config option change itself."""
    kind = plain.get("sessionUpdate")
    if kind in ("tool_call", "tool_call_update"):
        return tool_call_update_fields(plain)
    if kind == "plan":
        plan: dict[str, Any] = {"type": "items", "planId": plan_id, "entries": plain.get("entries", [])}
        out: dict[str, Any] = {"sessionUpdate": "plan_update", "plan": plan}
        if "_meta" in plain:
            out["_meta"] = plain["_meta"]
        return out
    if kind == "available_commands_update":
        commands = plain.get("availableCommands")
        if isinstance(commands, list):
            return {**plain, "availableCommands": [_command(c) for c in commands]}
        return plain
    if kind == "config_option_update":
        options = plain.get("configOptions")
        if isinstance(options, list):
            return {**plain, "configOptions": [_config_option(o) for o in options]}
        return plain
    if kind == "current_mode_update":
        return None
    return plain  # usage, session info, notices, compaction and unknown updates keep their shape


# -- permission -----------------------------------------------------------------------------------------


def permission_request(request: v1.RequestPermissionRequest) -> m.RequestPermissionRequest:
    """A v1 permission request (a bare ``toolCall``) as the model's (a ``title`` and a tool-call subject)."""
    call = tool_call(request.tool_call)
    title = call.title if isinstance(call.title, str) and call.title else "Permission requested"
    options = convert(_plain(request.options), list[m.PermissionOption])
    return m.RequestPermissionRequest(
        session_id=request.session_id,
        title=title,
        options=options,
        subject=m.ToolCallPermissionSubject(tool_call=call),
        meta=request.meta,
    )


def permission_response_to_v1(response: m.RequestPermissionResponse) -> Any:
    """The model's answer in v1's shape (the same JSON: ``outcome`` selected or cancelled)."""
    return _plain(response)


# -- sessions --------------------------------------------------------------------------------------------


def session_infos(sessions: Any) -> list[m.SessionInfo]:
    return list(convert(_plain(sessions), list[m.SessionInfo]))


def mcp_servers_to_v1(servers: Any) -> list[Any]:
    """Model MCP server configs in v1's shape: stdio has no ``type`` and needs ``args`` and ``env``;
    http and sse need ``headers``; ``acp`` (unstable in v1 too) passes as it is."""
    out: list[Any] = []
    for server in servers if isinstance(servers, list) else []:
        plain = _plain(server)
        if not isinstance(plain, dict):
            continue
        kind = plain.get("type")
        if kind == "stdio":
            plain.pop("type")
            plain.setdefault("args", [])
            plain.setdefault("env", [])
        elif kind in ("http", "sse"):
            plain.setdefault("headers", [])
        out.append(plain)
    return out
