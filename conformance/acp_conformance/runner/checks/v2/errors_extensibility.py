"""Errors and extensibility (v2): the JSON-RPC envelope of answers (ids echoed, one of result and error, error
objects), unknown and custom methods and notifications, malformed params, ``_meta`` (taken on a prompt, always an
object where the agent sends it) and no keys the schema does not define at the root of what the agent sends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from acp_session.schema import types as t
from acp_session.schema import unstable as mu
from acp_session.schema.types import (
    CancelledPermissionOutcome,
    CloseSessionRequest,
    ListSessionsRequest,
    RequestPermissionResponse,
)

from ...frames import Frame
from ...outcomes import NotApplicable
from ...registry import CheckContext, require
from ..common import HELLO, invalid_params_common, wait_permission
from .base import V2, accepted, hello_turn

__all__ = [
    "custom_notification_ignored",
    "custom_request_answered",
    "error_messages",
    "invalid_params",
    "meta_accepted",
    "meta_objects",
    "no_unknown_root_keys",
    "notifications_unanswered",
    "response_ids",
    "response_shape",
    "unknown_method",
]


@V2(
    "unknown-method",
    "unknown methods, _-prefixed or not, get -32601",
    "errors and extensibility",
    ("schema:ErrorCode(-32601)", "extensibility.mdx#custom-requests"),
    needs_session=False,
)
async def unknown_method(ctx: CheckContext) -> str | None:
    p = ctx.probe
    for method in ("_acp_conformance/unknown", "acp_conformance/unknown"):
        frame = await p.call(method, {}, rule="schema:ErrorCode(-32601)")
        require(frame.error_code == -32601, "schema:ErrorCode(-32601)", f"{method}: got {frame.message}")
    return None


@V2(
    "custom-request-answered",
    "a _-prefixed request the agent does not know gets a response (a result or any error)",
    "errors and extensibility",
    ("extensibility.mdx#custom-requests",),
    needs_session=False,
)
async def custom_request_answered(ctx: CheckContext) -> str | None:
    frame = await ctx.probe.call(
        "_acp_conformance/custom", {"probe": "custom request"}, rule="extensibility.mdx#custom-requests"
    )
    return f"answered with {'a result' if frame.error is None else f'error {frame.error_code}'}"


def _stray(p: Any, start: int) -> list[Frame]:
    """Responses since ``start`` that answer none of the runner's requests (ours are 1, 2, ...)."""
    ours = range(1, p.sent_ids + 1)

    def stray(frame: Frame) -> bool:
        rid = frame.message.get("id") if isinstance(frame.message, dict) else None
        return frame.is_response and not (type(rid) is int and rid in ours)

    found: list[Frame] = p.find(stray, start)
    return found


@V2(
    "custom-notification-ignored",
    "a _-prefixed notification the agent does not know gets no answer and does not end the agent",
    "errors and extensibility",
    ("extensibility.mdx#custom-notifications",),
    needs_session=False,
)
async def custom_notification_ignored(ctx: CheckContext) -> str | None:
    p = ctx.probe
    mark = p.mark
    await p.notify("_acp_conformance/notice", {"probe": "custom notification"})
    await p.barrier()
    require(not p.eof, "extensibility.mdx#custom-notifications", "the agent exited after a custom notification")
    stray = _stray(p, mark)
    require(
        not stray,
        "extensibility.mdx#custom-notifications",
        f"an unknown notification was answered: {stray[0].raw[:120]!r}" if stray else "",
    )
    return None


@V2(
    "notifications-unanswered",
    "no notification gets a response: a custom one, session/cancel of a session with no work, $/cancel_request",
    "errors and extensibility",
    ("overview.mdx", "ACP2-002", "schema:CancelSessionNotification"),
    needs_session=False,
)
async def notifications_unanswered(ctx: CheckContext) -> str | None:
    p = ctx.probe
    # A session of its own when the agent opens one: over HTTP a server may refuse (404) a message naming a
    # session it does not know before the agent sees it. An agent that wants a login is still judged, on an id.
    opened = await p.call("session/new", p.new_session_params(ctx.cwd), rule="session-setup.mdx")
    result = opened.result if opened.error is None else None
    sid = result.get("sessionId") if isinstance(result, dict) else None
    mark = p.mark
    await p.notify("_acp_conformance/notice", {"probe": "notification"})
    await p.notify("session/cancel", {"sessionId": sid if isinstance(sid, str) else "acp-conformance-no-work"})
    await p.notify("$/cancel_request", {"requestId": "acp-conformance-never-sent"})
    await p.barrier()
    stray = _stray(p, mark)
    require(not stray, "overview.mdx", f"a notification was answered: {stray[0].raw[:120]!r}" if stray else "")
    return None


@V2(
    "invalid-params",
    "malformed params get -32602",
    "errors and extensibility",
    ("schema:ErrorCode(-32602)",),
    prompts=False,
)
async def invalid_params(ctx: CheckContext) -> str | None:
    return await invalid_params_common(ctx, {"cwd": 42})


@V2(
    "meta-accepted",
    "a prompt carrying _meta (a traceparent) is accepted",
    "errors and extensibility",
    ("extensibility.mdx",),
)
async def meta_accepted(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    start = p.mark
    meta = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}], "_meta": meta}
    rid = await p.request("session/prompt", params)
    await accepted(p, sid, start, rid, "extensibility.mdx", "a prompt carrying _meta")
    return None


def _metas(value: Any, path: str) -> list[tuple[str, Any]]:
    """Every ``_meta`` value in a JSON value, with its path."""
    found: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "_meta":
                found.append((f"{path}._meta", item))
            found += _metas(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _metas(item, f"{path}[{index}]")
    return found


@V2(
    "meta-objects",
    "every _meta the agent sends (initialize, a turn, a permission request) is an object or null",
    "errors and extensibility",
    ("extensibility.mdx", "schema:Meta"),
    optional_scenarios=("permission",),
)
async def meta_objects(ctx: CheckContext) -> str | None:
    p = ctx.probe
    found = _metas(p.init_result, "initialize")
    start = p.mark
    sid, _turn = await hello_turn(ctx)
    scenario = ctx.optional_scenario("permission")
    if scenario is not None:
        _start, _rid, ask = await wait_permission(ctx, scenario, sid)
        p.auto_answer_permissions = True
        assert ask.message is not None
        await p.respond(ask.message["id"], RequestPermissionResponse(outcome=CancelledPermissionOutcome()))
    await p.barrier()
    for frame in p.frames[start:]:
        if frame.message is not None:
            found += _metas(frame.message, f"line {frame.index + 1}")
    if not found:
        raise NotApplicable("the agent sent no _meta")
    bad = [(path, value) for path, value in found if value is not None and not isinstance(value, dict)]
    require(not bad, "extensibility.mdx", f"_meta must be an object: {bad[0][0]} is {bad[0][1]!r}" if bad else "")
    return f"{len(found)} _meta value(s)"


def _fields(*types: Any) -> frozenset[str]:
    return frozenset(f.encode_name for tp in types for f in msgspec.structs.fields(tp))


_ROOTS: dict[str, frozenset[str]] = {  # the stable schema's fields and the unstable one's (Preview) alike
    "initialize": _fields(t.InitializeResponse, mu.InitializeResponse),
    "session/new": _fields(t.NewSessionResponse),
    "session/prompt": _fields(t.PromptResponse),
    "session/list": _fields(t.ListSessionsResponse, mu.ListSessionsResponse),
    "session/close": _fields(t.CloseSessionResponse),
    "session/update": _fields(t.UpdateSessionNotification, mu.UpdateSessionNotification),
    "session/request_permission": _fields(t.RequestPermissionRequest),
}


def _unknown_keys(what: str, value: Any) -> str | None:
    known = _ROOTS[what]
    extra = sorted(k for k in value if k not in known) if isinstance(value, dict) else []
    return f"{what}: {', '.join(extra)}" if extra else None


@V2(
    "no-unknown-root-keys",
    "what the agent sends (results, updates, requests) has no key the schema does not define at its root",
    "errors and extensibility",
    ("extensibility.mdx",),
)
async def no_unknown_root_keys(ctx: CheckContext) -> str | None:
    p = ctx.probe
    problems = [_unknown_keys("initialize", p.init_result)]
    start = p.mark
    new = await p.call_ok("session/new", p.new_session_params(ctx.cwd), rule="session-setup.mdx")
    problems.append(_unknown_keys("session/new", new))
    sid = new.get("sessionId") if isinstance(new, dict) else ""
    turn = await p.run_turn(str(sid), HELLO)
    problems.append(_unknown_keys("session/prompt", turn.response.result))
    listed = await p.call("session/list", {"cwd": ctx.cwd}, rule="session-list.mdx")
    problems.append(_unknown_keys("session/list", listed.result))
    closed = await p.call_ok("session/close", CloseSessionRequest(session_id=str(sid)), rule="ACP2-074")
    problems.append(_unknown_keys("session/close", closed))
    for frame in p.frames[start:]:
        if frame.method in ("session/update", "session/request_permission"):
            problems.append(_unknown_keys(frame.method, frame.params))
    found = [x for x in problems if x is not None]
    require(not found, "extensibility.mdx", f"keys the schema does not define: {'; '.join(found)}")
    return None


async def _errors(ctx: CheckContext) -> tuple[int, list[Frame]]:
    """A success and two errors provoked (an unknown method, malformed params): where they start, the answers."""
    p = ctx.probe
    start = p.mark
    return start, [  # an agent that wants a login answers -32000: an answer to judge all the same
        await p.call("session/list", ListSessionsRequest(), rule="session-list.mdx"),
        await p.call("acp_conformance/unknown", {}, rule="schema:ErrorCode(-32601)"),
        await p.call("session/new", {"cwd": 42}, rule="schema:ErrorCode(-32602)"),
    ]


def _answer_to(text_id: str) -> Callable[[Frame], bool]:
    """An answer to the request of id ``text_id``, or to the number it spells (a wrong echo)."""
    alike: tuple[Any, ...] = (text_id, int(text_id)) if text_id.isdigit() else (text_id,)
    return lambda f: f.is_response and (f.message or {}).get("id") in alike


@V2(
    "response-ids",
    "answers echo the request's id exactly, integer and string alike",
    "errors and extensibility",
    ("ACP2-005", "schema:RequestId"),
    needs_session=False,
)
async def response_ids(ctx: CheckContext) -> str | None:
    p = ctx.probe
    await p.call("session/list", ListSessionsRequest(), rule="ACP2-005")  # an integer id: answered at all
    for text_id in ("12345", "acp-conformance-text-id"):
        mark = p.mark
        await p.send_raw(f'{{"jsonrpc":"2.0","id":"{text_id}","method":"session/list","params":{{}}}}'.encode())
        frame = await p.wait_for(_answer_to(text_id), ctx.wait, mark)
        require(frame is not None, "ACP2-005", f"no answer carries the id {text_id!r} of the request")
        assert frame is not None and frame.message is not None
        got = frame.message.get("id")
        require(type(got) is str, "ACP2-005", f"the request's id {text_id!r} was answered as {got!r}")
    return None


@V2(
    "response-shape",
    "every answer carries exactly one of result and error; an error has an integer code and a string message",
    "errors and extensibility",
    ("schema:AgentResponse", "schema:Error"),
    needs_session=False,
)
async def response_shape(ctx: CheckContext) -> str | None:
    _start, answers = await _errors(ctx)
    for frame in answers:
        message = frame.message or {}
        both = "result" in message and "error" in message
        require(not both, "schema:AgentResponse", f"line {frame.index + 1}: both result and error: {frame.raw[:120]!r}")
        error = message.get("error")
        if error is not None:
            code = error.get("code") if isinstance(error, dict) else None
            text = error.get("message") if isinstance(error, dict) else None
            require(
                type(code) is int and isinstance(text, str),
                "schema:Error",
                f"line {frame.index + 1}: an error needs an integer code and a string message: {error!r}",
            )
    return None


@V2(
    "error-messages",
    "an error's message is one non-empty line",
    "errors and extensibility",
    ("schema:Error",),
    needs_session=False,
)
async def error_messages(ctx: CheckContext) -> str | None:
    _start, answers = await _errors(ctx)
    for frame in answers:
        error = frame.error
        if error is None:
            continue
        text = error.get("message")
        require(
            isinstance(text, str) and text.strip() != "" and "\n" not in text and "\r" not in text,
            "schema:Error",
            f"line {frame.index + 1}: the error message {text!r} is not one non-empty line",
        )
    return None
