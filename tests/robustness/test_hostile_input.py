"""Hostile input: each row is the exact bytes a real agent subprocess writes after ``session/new``, and the exact
outcome: what the client answered on the wire, what it reported to ``on_frame_error``, what reached the
application. After every row the connection must still work (a ``session/set_config_option`` round trip).

docs/robustness.md shows the same table; ``test_doc_table_matches`` keeps the two in step.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.conversation import UnknownEntry
from acp_session.errors import InvalidParams, InvalidRequest, MessageTooLarge, ParseError
from acp_session.schema.types import (
    RequestPermissionRequest,
    ToolCallUpdated,
    UnknownSessionUpdate,
)

from .support import Observed, hostile, responses, wait_for_responses

DOC = Path(__file__).parents[2] / "docs" / "robustness.md"
MIB = 1024 * 1024


def line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def upd(update: dict[str, Any], session: str = "s1") -> bytes:
    return line({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}})


def chunk(text: str, mid: str = "a1") -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "messageId": mid, "content": {"type": "text", "text": text}}


def perm(rid: Any, **params: Any) -> bytes:
    body = {"sessionId": "s1", "title": "run?", "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}]}
    body.update(params)
    return line({"jsonrpc": "2.0", "id": rid, "method": "session/request_permission", "params": body})


def err(rid: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": error}


PARSE = err(None, -32700, "Parse error")
INVALID = err(None, -32600, "Invalid request")
YES = {"outcome": {"outcome": "selected", "optionId": "yes"}}
CANCELLED = {"outcome": {"outcome": "cancelled"}}


def unknown_method(rid: Any, method: str = "_x/unknown") -> dict[str, Any]:
    return err(rid, -32601, "Method not found", {"method": method})


def call(rid: str, method: str = "_x/unknown") -> bytes:
    return b'{"jsonrpc":"2.0","id":%s,"method":"%s"}\n' % (rid.encode(), method.encode())


def text_of(seen: Observed, mid: str = "a1", session: str = "s1") -> str | None:
    state = seen.states.get(session)
    message = state.message(mid) if state else None
    return None if message is None else message.text


def after_ok(seen: Observed) -> None:
    """The frame after the hostile one was delivered normally."""
    assert text_of(seen) == "after"


@dataclass
class Row:
    name: str
    sent: bytes
    replies: list[dict[str, Any]] = field(default_factory=list)
    errors: list[type[Exception]] = field(default_factory=list)
    check: Callable[[Observed], None] = after_ok
    outcome: str = ""


def check_huge_line(seen: Observed) -> None:
    after_ok(seen)
    assert text_of(seen, "big") is None


def check_unknown_session(seen: Observed) -> None:
    assert [n.session_id for n in seen.notes] == ["nope"]
    assert text_of(seen, session="nope") == "hi"


def check_unknown_kind(seen: Observed) -> None:
    (note,) = seen.notes
    assert isinstance(note.update, UnknownSessionUpdate) and note.update.tag == "hologram"
    (entry,) = seen.states["s1"].timeline
    assert isinstance(entry, UnknownEntry)


def check_unknown_enums(seen: Observed) -> None:
    (note,) = seen.notes
    assert isinstance(note.update, ToolCallUpdated)
    call = seen.states["s1"].tool_calls["tc1"]
    assert (call.kind, call.status, call.is_final, call.has_known_status) == ("teleport", "exploded", False, False)


def check_ghost_tool_call(seen: Observed) -> None:
    calls = seen.states["s1"].tool_calls
    assert set(calls) == {"ghost"}
    assert (calls["ghost"].status, calls["ghost"].kind, calls["ghost"].title) == ("completed", "other", None)


def check_big_usage(seen: Observed) -> None:
    after_ok(seen)
    usage = seen.states["s1"].usage
    assert usage is not None and usage.used == 10**30


def check_duplicate_keys(seen: Observed) -> None:
    assert text_of(seen) == "second"  # the last occurrence wins, as in msgspec and json.loads


def nothing_delivered(seen: Observed) -> None:
    assert seen.notes == []


HUGE = b"1" + b"0" * 39  # 10**39: beyond 64 bits, still an exact Python int
DEEP = 10_000

ROWS = [
    Row(
        "truncated JSON",
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1"\n' + upd(chunk("after")),
        [PARSE],
        [ParseError],
        outcome="-32700, id null; next line delivered",
    ),
    Row(
        "invalid UTF-8",
        upd(chunk("caf\xe9")).replace(b"caf\\u00e9", b"caf\xe9") + upd(chunk("after")),
        [PARSE],
        [ParseError],
        outcome="-32700, id null (never decoded with replacement characters)",
    ),
    Row(
        "40 MiB line",
        upd(chunk("x" * (40 * MIB), "big")) + upd(chunk("after")),
        [],
        [MessageTooLarge],
        check_huge_line,
        "skipped while reading (never buffered past the 32 MiB limit); `MessageTooLarge` reported; no reply",
    ),
    Row(
        "10 000 nested arrays",
        b"[" * DEEP + b"]" * DEEP + b"\n" + upd(chunk("after")),
        [PARSE],
        [ParseError],
        outcome="-32700, id null (deeper than the decoder's limit of ~1000 levels)",
    ),
    Row(
        "10 000 nested arrays inside params",
        upd({"sessionUpdate": "agent_message_chunk", "x": json.loads("[" * 500 + "]" * 500)}).replace(
            b"[" * 500 + b"]" * 500, b"[" * DEEP + b"]" * DEEP
        )
        + upd(chunk("after")),
        [PARSE],
        [ParseError],
        outcome="-32700, id null",
    ),
    Row(
        "huge integer id",
        call(HUGE.decode()),
        [unknown_method(10**39)],
        outcome="-32601 echoing the id exactly (big integers are exact)",
        check=nothing_delivered,
    ),
    Row(
        "huge number as a field value",
        upd({"sessionUpdate": "usage_update", "used": 10**400, "size": 1}).replace(b"1" + b"0" * 400, b"1e400")
        + upd(chunk("after")),
        [],
        [InvalidParams],
        outcome="notification dropped, `-32602` reported locally (1e400 is out of range)",
    ),
    Row(
        "huge integer as a field value",
        upd({"sessionUpdate": "usage_update", "used": 10**30, "size": 1}) + upd(chunk("after")),
        check=check_big_usage,
        outcome="accepted as an exact Python int",
    ),
    Row(
        "duplicate keys",
        upd(chunk("first")).replace(b'"text":"first"', b'"text":"first","text":"second"'),
        [],
        [],
        check_duplicate_keys,
        "last occurrence wins",
    ),
    Row(
        '"jsonrpc": "1.0" request',
        b'{"jsonrpc":"1.0","id":"v1","method":"_x/unknown"}\n' + upd(chunk("after")),
        [err("v1", -32600, "Invalid request")],
        [InvalidRequest],
        outcome="-32600 on its own id",
    ),
    Row(
        '"jsonrpc": "1.0" notification',
        b'{"jsonrpc":"1.0","method":"session/update","params":{}}\n' + upd(chunk("after")),
        [INVALID],
        [InvalidRequest],
        outcome="-32600, id null",
    ),
    Row("id: string", call('"abc"'), [unknown_method("abc")], check=nothing_delivered, outcome="-32601, id echoed"),
    Row("id: integer", call("-7"), [unknown_method(-7)], check=nothing_delivered, outcome="-32601, id echoed"),
    Row("id: fraction", call("1.5"), [INVALID], [InvalidRequest], nothing_delivered, "-32600, id null"),
    Row(
        "id: 1.0",
        call("1.0"),
        [INVALID],
        [InvalidRequest],
        nothing_delivered,
        "-32600, id null (a fraction, even if integral)",
    ),
    Row("id: null", call("null"), [INVALID], [InvalidRequest], nothing_delivered, "-32600, id null"),
    Row("id: boolean", call("true"), [INVALID], [InvalidRequest], nothing_delivered, "-32600, id null"),
    Row("id: array", call("[1]"), [INVALID], [InvalidRequest], nothing_delivered, "-32600, id null"),
    Row("id: object", call('{"a":1}'), [INVALID], [InvalidRequest], nothing_delivered, "-32600, id null"),
    Row(
        "response to an unknown id",
        b'{"jsonrpc":"2.0","id":999,"result":{}}\n' + upd(chunk("after")),
        outcome="logged and dropped; no reply",
    ),
    Row(
        "error response with id null",
        b'{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}\n' + upd(chunk("after")),
        outcome="logged only (answering it could ping-pong)",
    ),
    Row(
        "request with no method",
        b'{"jsonrpc":"2.0","id":"nm","params":{}}\n' + upd(chunk("after")),
        [INVALID],
        [InvalidRequest],
        outcome="-32600, id null (neither request nor response)",
    ),
    Row(
        "params: a string",
        b'{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":"go"}\n' + upd(chunk("after")),
        [err("p1", -32600, "Invalid request")],
        [InvalidRequest],
        outcome="-32600 on its own id (params must be structured)",
    ),
    Row(
        "params: an array",
        b'{"jsonrpc":"2.0","id":"p2","method":"session/request_permission","params":[1]}\n',
        [err("p2", -32602, "Invalid params", {"path": "$", "reason": "Expected `object`, got `list`"})],
        check=nothing_delivered,
        outcome="-32602 with the path in data",
    ),
    Row(
        "params: field of the wrong type",
        perm("p3", sessionId=5),
        [err("p3", -32602, "Invalid params", {"path": "$.sessionId", "reason": "Expected `str`, got `int`"})],
        check=nothing_delivered,
        outcome="-32602, data `{path: $.sessionId}`",
    ),
    Row(
        "notification params of the wrong type",
        upd({"sessionUpdate": "agent_message_chunk", "messageId": 1, "content": {"type": "text", "text": "x"}})
        + upd(chunk("after")),
        [],
        [InvalidParams],
        outcome="dropped; `-32602` with the path reported locally (notifications get no reply)",
    ),
    Row(
        "notification for an unknown session",
        upd(chunk("hi"), session="nope"),
        check=check_unknown_session,
        outcome="delivered to the update handler (the application decides)",
    ),
    Row(
        "unknown sessionUpdate kind",
        upd({"sessionUpdate": "hologram", "beam": 1}),
        check=check_unknown_kind,
        outcome="delivered as `UnknownSessionUpdate` (raw JSON); kept in the timeline as `UnknownEntry`",
    ),
    Row(
        "unknown enum values",
        upd({"sessionUpdate": "tool_call_update", "toolCallId": "tc1", "kind": "teleport", "status": "exploded"}),
        check=check_unknown_enums,
        outcome="kept as strings; the tool call is neither final nor of a known status",
    ),
    Row(
        "permission request with zero options",
        perm("z1", options=[]),
        [
            {
                "jsonrpc": "2.0",
                "id": "z1",
                "error": {
                    "code": -32602,
                    "message": "Invalid params",
                    "data": {"path": "$.options", "reason": "Expected length >= 1"},
                },
            }
        ],
        check=nothing_delivered,
        outcome="-32602 with `$.options` in data; the handler is never called (F3, fixed)",
    ),
    Row(
        "permission request, valid",
        perm("ok1"),
        [{"jsonrpc": "2.0", "id": "ok1", "result": YES}],
        check=nothing_delivered,
        outcome="answered by the handler (control row)",
    ),
    Row(
        "tool call update for a never-announced tool call",
        upd({"sessionUpdate": "tool_call_update", "toolCallId": "ghost", "status": "completed"}),
        check=check_ghost_tool_call,
        outcome="upserted: a tool call with protocol defaults and the given fields",
    ),
    Row(
        "non-protocol text on stdout",
        b"Loading model weights... 42%\n" + upd(chunk("after")),
        [PARSE],
        [ParseError],
        outcome="-32700, id null; next line delivered",
    ),
    Row("empty and whitespace lines", b"\n   \n\t\r\n" + upd(chunk("after")), outcome="ignored"),
    Row(
        "batch array",
        b'[{"jsonrpc":"2.0","id":"b1","method":"_x/unknown"}]\n' + upd(chunk("after")),
        [INVALID],
        [InvalidRequest],
        outcome="-32600, id null; nothing in it runs",
    ),
]


def on_permission(request: RequestPermissionRequest) -> str | None:
    return request.options[0].option_id if request.options else None


@pytest.mark.anyio
@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
async def test_hostile_input(row: Row, tmp_path: Path) -> None:
    payload = tmp_path / "payload.bin"
    payload.write_bytes(row.sent)
    config = {"after_new": [{"raw_file": str(payload)}, {"marker": "end"}]}
    builder = ClientBuilder("robustness", "1.0").on_request_permission(on_permission)
    async with hostile(tmp_path, config, builder) as (_client, session, seen, log):
        with anyio.fail_after(20):
            await seen.marker("end").wait()
        await wait_for_responses(log, len(row.replies))
        # Still alive: a request/response round trip after the hostile bytes.
        assert await session.set_config_option("fast", True) == []
    got = responses(log)
    assert sorted(got, key=json.dumps) == sorted(row.replies, key=json.dumps)
    assert [type(e) for e in seen.frame_errors] == row.errors
    if row.name == "40 MiB line":
        (error,) = seen.frame_errors
        assert isinstance(error, MessageTooLarge) and error.args
    row.check(seen)


def test_doc_table_matches() -> None:
    """docs/robustness.md lists every row, in order, with the same outcome text."""
    rows = re.findall(r"^\| (.+?) \| (.+?) \|$", DOC.read_text(), re.MULTILINE)
    table = {name: outcome for name, outcome in rows}
    for row in ROWS:
        assert table.get(row.name.replace("|", "\\|")) == row.outcome, row.name


@pytest.mark.anyio
async def test_zero_option_permission_request_is_invalid_params(tmp_path: Path) -> None:
    asked: list[RequestPermissionRequest] = []
    builder = ClientBuilder("robustness", "1.0").on_request_permission(lambda r: asked.append(r))
    payload = tmp_path / "payload.bin"
    payload.write_bytes(perm("z1", options=[]))
    config = {"after_new": [{"raw_file": str(payload)}, {"marker": "end"}]}
    async with hostile(tmp_path, config, builder) as (_client, _session, seen, log):
        await seen.marker("end").wait()
        (reply,) = await wait_for_responses(log, 1)
    assert reply["error"]["code"] == -32602 and reply["error"]["data"]["path"] == "$.options"
    assert asked == []
