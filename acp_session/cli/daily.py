"""What ``chat`` and ``resume`` do with the daily flags once the agent runs (issue 38): the named session, the
system prompt, the fork, ``--model`` / ``--mode`` / ``--set``, the chat's ``/model`` / ``/mode`` / ``/set``,
the permission policy's decisions, and ``--timeout``.

The functions take the ``ChatApp`` and its parsed arguments, so the subcommands only call them at the right
moment; failures are reported in one line like every other CLI failure (``--json``: an ``error`` record).
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

import anyio

from acp_session.client import ClientConnection, PermissionDecision
from acp_session.client_errors import CapabilityNotSupported
from acp_session.errors import AcpError
from acp_session.schema import RequestPermissionRequest
from acp_session.transport.environment import agent_environment

from .exits import EXIT_ERROR, EXIT_USAGE
from .messages import Failure, describe
from .named_sessions import NamedSessions
from .recap import recap_lines
from .render_json import JsonRenderer
from .session_options import OptionProblem, describe_options, parse_command, resolve_setting

if TYPE_CHECKING:
    from acp_session.conversation import Conversation

    from .app import ChatApp

__all__ = [
    "apply_settings",
    "open_named",
    "new_session_options",
    "policy_reason",
    "profile_environment",
    "run_own_command",
    "show_policy_decision",
    "turn_timer",
    "wrap_up_opening",
]


def profile_environment(args: Any) -> dict[str, str] | None:
    """The agent's environment with a config profile's ``env`` over it (None: no profile env, the default)."""
    extra = getattr(args, "profile_env", None)
    if not extra:
        return None
    base = agent_environment(getattr(args, "env", "inherit"), getattr(args, "pass_env", None) or ())
    return {**(base if base is not None else os.environ), **extra}


def policy_reason(reason: str) -> str:
    """The library's reason as the flag that gave it (``rule allow edit:src/**`` -> ``--allow edit:src/**``)."""
    if reason.startswith("rule "):
        action, _, rule = reason[5:].partition(" ")
        return f"--{action} {rule}"
    return f"--{reason}"


def show_policy_decision(app: ChatApp, request: RequestPermissionRequest, decision: PermissionDecision) -> None:
    """A request the policy answered: shown like an answered question, naming the flag (``--json``: the
    ``permission`` record with ``decided_by: "policy"``, the rule, the tool kind and paths)."""
    title = request.title if isinstance(request.title, str) else "permission"
    options = [(o.option_id, o.name, str(o.kind)) for o in request.options]
    reason = policy_reason(decision.reason)
    if isinstance(app.renderer, JsonRenderer):
        app.renderer.emit(
            {
                "event": "permission",
                "title": title,
                "options": [{"id": i, "name": n, "kind": k} for i, n, k in options],
                "answer": decision.option_id,
                "decided_by": "policy",
                "decision": decision.action,
                "policy": reason,
                "tool_kind": decision.facts.kind,
                "paths": list(decision.facts.paths),
            }
        )
        return
    app.renderer.permission(f"{title} ({reason})", options, decision.option_id)


def new_session_options(app: ChatApp, client: ClientConnection) -> dict[str, Any] | Failure:
    """``start_conversation`` / ``fork`` keyword arguments for ``--system-prompt``, or why the agent cannot take
    it (it advertises no ``session.systemPrompt``)."""
    text = getattr(app.args, "system_prompt_text", None)
    if text is None:
        return {}
    modes = client.agent.system_prompt_modes
    if "append" not in modes:
        offered = f" (it offers: {', '.join(sorted(modes))})" if modes else ""
        return Failure(f"--system-prompt: the agent takes no system prompt{offered}", "SystemPromptNotSupported")
    return {"system_prompt": text}


async def open_named(app: ChatApp, client: ClientConnection) -> Conversation | int:
    """``chat --session NAME``: resume the session this agent's NAME stands for, else start one and name it."""
    from acp_session.conversation import Conversation

    args = app.args
    names = NamedSessions()
    found = names.find(args.session_name, args.agent_key)
    if found is not None:
        args.session_id = found["session_id"]
        cwd = args.cwd_given or found.get("cwd") or args.cwd
        args.cwd = cwd
        conversation = await Conversation.resume(client, args.session_id, cwd, mcp_servers=app.mcp_servers(client))
        if not app.json and not app.quiet:
            for line in recap_lines(conversation.history(), args.session_id, args.session_name):  # cli/recap.py
                app.renderer.info(line)
        return conversation
    if args.fork:
        app.report(Failure(f"--fork: there is no session named {args.session_name!r} to fork yet", "NoSessionToFork"))
        return EXIT_USAGE
    options = new_session_options(app, client)
    if isinstance(options, Failure):
        app.report(options)
        return EXIT_USAGE
    conversation = await client.start_conversation(args.cwd, mcp_servers=app.mcp_servers(client), **options)
    names.remember(args.session_name, conversation.session_id or "", args.agent_key, args.cwd)
    if not app.json and not app.quiet:
        app.renderer.info(f"started session {args.session_name!r} ({conversation.session_id})")
    return conversation


async def wrap_up_opening(app: ChatApp, conversation: Conversation) -> Conversation | int:
    """After the session is open: ``--fork`` (continue in a fork of it), then ``--model`` / ``--mode`` /
    ``--set``; an exit code when one of them cannot be done."""
    args = app.args
    if getattr(args, "fork", False):
        client = conversation.session.connection
        if not client.agent.supports("session/fork"):
            app.report(Failure("--fork: the agent cannot fork sessions (no session.fork)", "ForkNotSupported"))
            return EXIT_USAGE
        options = new_session_options(app, client)
        if isinstance(options, Failure):
            app.report(options)
            return EXIT_USAGE
        source = conversation.session_id
        fork = await conversation.fork(args.cwd, mcp_servers=conversation.mcp_servers, **options)
        await _close_quietly(conversation)
        conversation = fork
        if not app.json and not app.quiet:
            app.renderer.info(f"forked session {source} into {fork.session_id}")
        elif isinstance(app.renderer, JsonRenderer):
            app.renderer.emit({"event": "fork", "source_session_id": source, "session_id": fork.session_id})
    code = await apply_settings(app, conversation, getattr(args, "settings", []))
    return conversation if code is None else code


async def _close_quietly(conversation: Conversation) -> None:
    with anyio.move_on_after(3), anyio.CancelScope(shield=True), contextlib.suppress(AcpError):
        await conversation.disconnect(timeout=3)


async def apply_settings(
    app: ChatApp, conversation: Conversation, settings: list[tuple[str, str, str, bool]]
) -> int | None:
    """Set each (key, value, flag, optional) the agent offers; the first it does not is reported with what it
    offers (exit code 2), an agent's refusal with its error (exit code 1). An optional one (the config file's
    ``[defaults]``, meant for every agent) that the agent does not offer is skipped, with one dim note for all."""
    skipped: list[str] = []
    code = await _apply_each(app, conversation, settings, skipped)
    if code is None and skipped:
        app.renderer.info(f"acp-session: skipped what this agent does not offer: {'; '.join(skipped)}")
    return code


async def _apply_each(
    app: ChatApp, conversation: Conversation, settings: list[tuple[str, str, str, bool]], skipped: list[str]
) -> int | None:
    for key, value, flag, optional in settings:
        try:
            setting = resolve_setting(conversation.state.config_options, key, value, flag)
            await conversation.session.set_config_option(setting.config_id, setting.value)
        except OptionProblem as exc:
            if optional:
                skipped.append(str(exc))
                continue
            app.report(Failure(str(exc), "UnknownConfigOption"))
            return EXIT_USAGE
        except (AcpError, CapabilityNotSupported) as exc:
            app.report(Failure(f"{flag} {value}: the agent refused it: {describe(exc).message}", "ConfigRefused"))
            return EXIT_ERROR
        if isinstance(app.renderer, JsonRenderer):
            record = {"config_id": setting.config_id, "name": setting.label, "value": setting.value, "flag": flag}
            app.renderer.emit({"event": "config_option", **record})
        elif not app.quiet:
            app.renderer.info(f"{setting.label}: {_shown(setting.value)}")
    return None


def _shown(value: str | bool) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else value


async def run_own_command(app: ChatApp, conversation: Conversation, text: str) -> bool:
    """``/model``, ``/mode``, ``/set`` typed in the chat: shown (no value) or set; False for any other text."""
    parsed = parse_command(text)
    if parsed is None:
        return False
    command, key, value = parsed
    options = conversation.state.config_options
    if key is None or value is None:
        lines = describe_options(options, key)
        if not lines:
            what = "config options" if key is None else f"{key} option"
            lines = [f"the agent offers no {what}"]
        for line in lines:
            app.renderer.info(line)
        return True
    flag = f"/{command}" if command != "set" else "/set"
    await apply_settings(app, conversation, [(key, value, flag, False)])
    return True


async def turn_timer(app: ChatApp, conversation: Conversation, seconds: float) -> None:
    """``--timeout``: a turn still running after ``seconds`` is cancelled (its stop reason: cancelled)."""
    await anyio.sleep(seconds)
    if app.active is conversation and not app.cancel_requested:
        app.cancel_requested = True
        app.renderer.info(f"acp-session: the turn ran over --timeout {seconds:g} s; cancelling it")
        try:
            await conversation.cancel()
        except Exception as exc:
            app.renderer.info(f"acp-session: the cancel request failed: {describe(exc).message}")
