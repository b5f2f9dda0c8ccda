"""Sans-IO core: classification, ids, pending table and error frames (no I/O, no event loop)."""

from __future__ import annotations

import json

import msgspec
import pytest

from acp_session.errors import InvalidResponse, RequestCancelled, ResourceNotFound, RpcError
from acp_session.rpc import (
    CancelRequested,
    NotificationReceived,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    RpcCore,
)


def frame(obj: object) -> bytes:
    return json.dumps(obj).encode()


def reply_of(event: object) -> dict[str, object]:
    assert isinstance(event, ProtocolViolation | ResponseReceived)
    assert event.reply is not None and event.reply.endswith(b"}")  # a message: framing is the transport's
    return json.loads(event.reply)  # type: ignore[no-any-return]


def test_request_ids_are_fresh_while_pending_acp2_006() -> None:
    core: RpcCore[str] = RpcCore()
    ids = [core.start_request("m", {"i": i}, f"slot{i}")[0] for i in range(50)]
    assert len(set(ids)) == 50 and ids == sorted(ids)
    assert all(core.is_pending(i) for i in ids)


def test_request_frame_is_one_message_without_framing() -> None:
    core: RpcCore[None] = RpcCore()
    id, data = core.start_request("say", {"text": "a\nb"}, None)
    assert b"\n" not in data and data.endswith(b"}")  # the newline of stdio framing is the transport's
    assert json.loads(data) == {"jsonrpc": "2.0", "id": id, "method": "say", "params": {"text": "a\nb"}}
    _, no_params = core.start_request("ping", None, None)
    assert "params" not in json.loads(no_params)


def test_request_frame_registers_nothing_until_expect() -> None:
    core: RpcCore[str] = RpcCore()
    id, data = core.request_frame("m", {"a": 1})
    assert json.loads(data) == {"jsonrpc": "2.0", "id": id, "method": "m", "params": {"a": 1}}
    assert not core.is_pending(id)
    assert core.receive(frame({"jsonrpc": "2.0", "id": id, "result": 1})) is None  # unknown id: dropped
    second, _ = core.request_frame("m", None)
    assert second == id + 1  # ids are never reused, sent or not
    core.expect(second, "slot")
    event = core.receive_response(frame({"jsonrpc": "2.0", "id": second, "result": 2}) + b"\n")
    assert isinstance(event, ResponseReceived) and event.slot == "slot" and not core.is_pending(second)


def test_scalar_params_are_refused_before_sending() -> None:
    core: RpcCore[None] = RpcCore()
    with pytest.raises(TypeError):
        core.start_request("m", 5, None)
    assert core.pending_count == 0


def test_response_matches_pending_and_pops_it() -> None:
    core: RpcCore[str] = RpcCore()
    id, _ = core.start_request("m", None, "slot")
    event = core.receive(frame({"jsonrpc": "2.0", "id": id, "result": {"ok": True}}))
    assert isinstance(event, ResponseReceived) and event.slot == "slot" and event.error is None
    assert event.result is not None and msgspec.json.decode(event.result) == {"ok": True}
    assert not core.is_pending(id)
    # a second answer for the same id is unknown now: logged and dropped
    assert core.receive(frame({"jsonrpc": "2.0", "id": id, "result": 1})) is None


def test_error_response_becomes_specific_subclass() -> None:
    core: RpcCore[str] = RpcCore()
    id, _ = core.start_request("m", None, "s")
    event = core.receive(frame({"jsonrpc": "2.0", "id": id, "error": {"code": -32002, "message": "gone", "data": 7}}))
    assert isinstance(event, ResponseReceived) and isinstance(event.error, ResourceNotFound)
    assert (event.error.code, event.error.message, event.error.data) == (-32002, "gone", 7)


def test_malformed_answer_to_pending_request_fails_it_and_gets_invalid_request() -> None:
    core: RpcCore[str] = RpcCore()
    id, _ = core.start_request("m", None, "s")
    event = core.receive(frame({"jsonrpc": "2.0", "id": id, "result": 1, "error": {"code": 1, "message": "x"}}))
    assert isinstance(event, ResponseReceived) and isinstance(event.error, InvalidResponse)
    assert reply_of(event)["id"] is None and reply_of(event)["error"]["code"] == -32600  # type: ignore[index]


def test_unknown_response_id_is_dropped() -> None:
    core: RpcCore[str] = RpcCore()
    assert core.receive(frame({"jsonrpc": "2.0", "id": 99, "result": None})) is None


@pytest.mark.parametrize("rid", [1, "abc", 0, -5, ""])
def test_incoming_request_and_reply_with_same_id_acp2_005(rid: int | str) -> None:
    core: RpcCore[None] = RpcCore()
    event = core.receive(frame({"jsonrpc": "2.0", "id": rid, "method": "x", "params": {"a": 1}}))
    assert isinstance(event, RequestReceived) and event.id == rid and event.method == "x"
    out = core.result_frame(rid, {"b": 2})
    assert out is not None and json.loads(out) == {"jsonrpc": "2.0", "id": rid, "result": {"b": 2}}
    assert core.result_frame(rid, 3) is None  # exactly one answer
    assert core.error_frame(rid, RequestCancelled()) is None


@pytest.mark.parametrize("rid", [None, 1.5, 2.0, True, [1], {"a": 1}])
def test_request_with_null_or_fractional_id_is_invalid_acp2_004(rid: object) -> None:
    core: RpcCore[None] = RpcCore()
    event = core.receive(frame({"jsonrpc": "2.0", "id": rid, "method": "x"}))
    assert isinstance(event, ProtocolViolation)
    assert reply_of(event) == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid request"}}


def test_notification_classified() -> None:
    core: RpcCore[None] = RpcCore()
    event = core.receive(frame({"jsonrpc": "2.0", "method": "session/update", "params": {"x": 1}}))
    assert isinstance(event, NotificationReceived) and event.method == "session/update"


@pytest.mark.parametrize(
    "data",
    [b"{", b"nul", b'{"a":1}}', b"\xff\xfe", b'{"jsonrpc":"2.0","method":"\xc3"}', b'{"id": 1, "method": tru}'],
)
def test_unparseable_or_invalid_utf8_gets_parse_error_with_null_id(data: bytes) -> None:
    event = RpcCore[None]().receive(data)
    assert isinstance(event, ProtocolViolation)
    assert reply_of(event) == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}


@pytest.mark.parametrize(
    "obj",
    [5, "x", None, {}, {"jsonrpc": "2.0"}, {"jsonrpc": "2.0", "method": 5}, {"jsonrpc": "2.0", "id": 1, "foo": 1}],
)
def test_valid_json_that_is_no_message_gets_invalid_request_null_id(obj: object) -> None:
    event = RpcCore[None]().receive(frame(obj))
    assert isinstance(event, ProtocolViolation)
    assert reply_of(event)["id"] is None and reply_of(event)["error"] == {"code": -32600, "message": "Invalid request"}


def test_request_with_valid_id_but_bad_fields_is_answered_on_that_id() -> None:
    core: RpcCore[None] = RpcCore()
    event = core.receive(frame({"jsonrpc": "1.0", "id": 7, "method": "x"}))
    assert reply_of(event)["id"] == 7 and reply_of(event)["error"]["code"] == -32600  # type: ignore[index]
    event = core.receive(frame({"jsonrpc": "2.0", "id": 8, "method": "x", "params": 3}))
    assert reply_of(event)["id"] == 8


@pytest.mark.parametrize(
    "batch",
    [
        [],
        [{"jsonrpc": "2.0", "id": 1, "method": "x"}],
        [{"jsonrpc": "2.0", "method": "x"}, {"jsonrpc": "2.0", "id": 2, "method": "x"}],
        [{"jsonrpc": "2.0", "method": "x"}, 1],
    ],
)
def test_batch_gets_one_invalid_request_and_nothing_runs(batch: list[object]) -> None:
    event = RpcCore[None]().receive(frame(batch))
    assert isinstance(event, ProtocolViolation)
    assert reply_of(event) == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid request"}}


def test_a_batch_of_notifications_gets_no_reply_and_nothing_runs() -> None:
    """Notifications are never answered, in a batch neither (JSON-RPC 2.0; ACP-BATCH-202 of the official kit)."""
    notes = [{"jsonrpc": "2.0", "method": "x"}, {"jsonrpc": "2.0", "method": "session/cancel", "params": {}}]
    event = RpcCore[None]().receive(frame(notes))
    assert isinstance(event, ProtocolViolation) and event.reply is None


def test_blank_lines_are_ignored() -> None:
    core: RpcCore[None] = RpcCore()
    assert core.receive(b"") is None and core.receive(b"  \r") is None


def test_duplicate_in_flight_id_rejected_acp2_006() -> None:
    core: RpcCore[None] = RpcCore()
    assert isinstance(core.receive(frame({"jsonrpc": "2.0", "id": 1, "method": "x"})), RequestReceived)
    event = core.receive(frame({"jsonrpc": "2.0", "id": 1, "method": "x"}))
    assert reply_of(event)["id"] is None  # never a second answer on id 1
    assert core.result_frame(1, None) is not None
    assert isinstance(core.receive(frame({"jsonrpc": "2.0", "id": 1, "method": "x"})), RequestReceived)


def test_cancel_request_only_for_in_flight_ids_acp2_002() -> None:
    core: RpcCore[None] = RpcCore()
    core.receive(frame({"jsonrpc": "2.0", "id": "r1", "method": "x"}))
    cancel = {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "r1"}}
    event = core.receive(frame(cancel))
    assert isinstance(event, CancelRequested) and event.id == "r1"
    core.error_frame("r1", RequestCancelled())
    assert core.receive(frame(cancel)) is None  # answered: ignored
    unknown = {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 42}}
    assert core.receive(frame(unknown)) is None
    assert core.receive(frame({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"x": 1}})) is None


def test_outgoing_cancel_frame_only_while_pending() -> None:
    core: RpcCore[None] = RpcCore()
    id, _ = core.start_request("m", None, None)
    out = core.cancel_frame(id)
    assert out is not None
    assert json.loads(out) == {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": id}}
    core.receive(frame({"jsonrpc": "2.0", "id": id, "result": 1}))
    assert core.cancel_frame(id) is None


def test_unencodable_result_becomes_internal_error_without_text() -> None:
    core: RpcCore[None] = RpcCore()
    core.receive(frame({"jsonrpc": "2.0", "id": 1, "method": "x"}))
    out = core.result_frame(1, object())
    assert out is not None and json.loads(out)["error"] == {"code": -32603, "message": "Internal error"}


def test_unencodable_error_data_is_dropped() -> None:
    core: RpcCore[None] = RpcCore()
    core.receive(frame({"jsonrpc": "2.0", "id": 1, "method": "x"}))
    out = core.error_frame(1, RpcError(-32001, "custom", data=object()))
    assert out is not None and json.loads(out)["error"] == {"code": -32001, "message": "custom"}


def test_close_returns_all_pending() -> None:
    core: RpcCore[str] = RpcCore()
    core.start_request("a", None, "1")
    core.start_request("b", None, "2")
    assert sorted(core.close()) == ["1", "2"] and core.pending_count == 0
