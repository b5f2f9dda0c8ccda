"""Hypothesis: random and mutated byte streams through framing + core never raise, never hang, and every
frame gets exactly the reply the rules give (checked against an independent oracle built on ``json``).

Rules covered: parse errors and invalid requests with id null, batches rejected as one -32600, request
ids never null (ACP2-004), replies on the same id (ACP2-005), $/cancel_request for unknown ids ignored
(ACP2-002).
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_session.rpc import ProtocolViolation, RequestReceived, ResponseReceived, RpcCore
from acp_session.transport import FrameReader, OversizedFrame

LIMIT = 512

ids = st.one_of(st.integers(-1000, 1000), st.text(max_size=5), st.none(), st.floats(allow_nan=False, width=32))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**31), 2**31) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def messages(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["request", "notification", "response", "error", "cancel", "batch", "other"]))
    msg: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0"]))}
    if kind in ("request", "notification"):
        msg["method"] = draw(st.sampled_from(["session/update", "x", "$/cancel_request"]))
        if draw(st.booleans()):
            msg["params"] = draw(st.dictionaries(st.text(max_size=4), json_values, max_size=3) | json_values)
        if kind == "request":
            msg["id"] = draw(ids)
    elif kind == "cancel":
        msg.update(method="$/cancel_request", params={"requestId": draw(ids)})
    elif kind in ("response", "error"):
        msg["id"] = draw(ids)
        if kind == "response" or draw(st.booleans()):
            msg["result"] = draw(json_values)
        if kind == "error":
            msg["error"] = draw(st.sampled_from([{"code": -32800, "message": "c"}, {"code": "x"}, 5]))
    elif kind == "batch":
        return draw(st.lists(st.builds(dict, method=st.just("x"), jsonrpc=st.just("2.0")), max_size=3))
    else:
        return draw(json_values)
    return msg


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    data = json.dumps(draw(messages()), ensure_ascii=draw(st.booleans())).encode()
    for _ in range(draw(st.integers(0, 2))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "pad"]))
        pos = draw(st.integers(0, len(data)))
        if op == "flip" and data:
            pos = min(pos, len(data) - 1)
            data = data[:pos] + bytes([draw(st.integers(0, 255))]) + data[pos + 1 :]
        elif op == "cut":
            data = data[:pos]
        elif op == "insert":
            data = data[:pos] + draw(st.binary(min_size=1, max_size=3)) + data[pos:]
        else:
            data = data + b" " * draw(st.integers(0, LIMIT))
    return data.replace(b"\n", b" ")


def _no_constant(_: str) -> Any:
    raise ValueError("not JSON")


def _checked_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError("out of range")
    return value


def _repaired(value: Any) -> Any:
    """``value`` with every lone surrogate (a ``\\uD8xx``-``\\uDFxx`` escape without its pair) as U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_repaired(item) for item in value]
    if isinstance(value, dict):
        return {_repaired(key): _repaired(item) for key, item in value.items()}
    return value


def _notification_shape(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("method"), str) and "id" not in value


def oracle(frame: bytes, pending: set[Any], in_flight: set[Any]) -> tuple[str, Any, int] | str | None:
    """What the rules say must happen: a reply ("reply", id, code), a dispatched "request", or None."""
    if not frame.strip(b" \t\r"):
        return None
    try:
        value = json.loads(frame.decode("utf-8"), parse_constant=_no_constant, parse_float=_checked_float)
    except (ValueError, UnicodeError, RecursionError):
        return ("reply", None, -32700)
    value = _repaired(value)  # a lone surrogate escape is read as U+FFFD (issue 26 item 5, rpc/repair.py)
    invalid = ("reply", None, -32600)
    if isinstance(value, list) and value and all(_notification_shape(v) for v in value):
        return None  # a batch of notifications only: no reply, as for each of them (nothing in it runs)
    if not isinstance(value, dict):
        return invalid
    rid = value.get("id", "<absent>")
    valid_id = type(rid) in (int, str) and rid != "<absent>"
    if "method" in value:
        if not isinstance(value["method"], str):
            return invalid
        bad = value.get("jsonrpc") != "2.0" or "result" in value or "error" in value
        params = value.get("params", {})
        bad = bad or not isinstance(params, dict | list)
        if bad:
            return ("reply", rid, -32600) if valid_id and rid not in in_flight else invalid
        if rid == "<absent>":
            return None  # notifications (including $/cancel_request) never get a reply
        if not valid_id or rid in in_flight:
            return invalid
        in_flight.add(rid)
        return "request"
    if not valid_id:
        # An error the peer could not tie to an id is only logged: answering it could ping-pong forever.
        peer_error = rid is None and "error" in value and "result" not in value and value.get("jsonrpc") == "2.0"
        return None if peer_error else invalid
    error = value.get("error")
    well_formed = value.get("jsonrpc") == "2.0" and (("result" in value) != ("error" in value))
    if well_formed and "error" in value:
        well_formed = (
            isinstance(error, dict) and type(error.get("code")) is int and isinstance(error.get("message"), str)
        )
    pending.discard(rid)
    return None if well_formed else invalid


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(frames(), max_size=12), st.lists(st.integers(1, 64), min_size=1, max_size=8))
def test_every_frame_gets_the_reply_the_rules_give(stream: list[bytes], chunk_sizes: list[int]) -> None:
    core: RpcCore[int] = RpcCore()
    pending: set[Any] = set()
    for i in range(3):  # some of our own requests are waiting for answers
        pending.add(core.start_request("m", None, i)[0])
    in_flight: set[Any] = set()
    data = b"".join(f + b"\n" for f in stream)
    reader = FrameReader(max_frame_size=LIMIT)
    got: list[bytes | OversizedFrame] = []
    pos = 0
    k = 0
    while pos < len(data):
        size = chunk_sizes[k % len(chunk_sizes)]
        got += reader.feed(data[pos : pos + size])
        pos += size
        k += 1
    assert len(got) == len(stream)
    for sent, frame in zip(stream, got, strict=True):
        if len(sent) > LIMIT:
            assert frame == OversizedFrame(len(sent))
            continue
        assert frame == sent
        event = core.receive(frame)
        expected = oracle(frame, pending, in_flight)
        reply = getattr(event, "reply", None)
        if expected is None:
            assert reply is None and not isinstance(event, RequestReceived), (frame, event)
        elif expected == "request":
            assert isinstance(event, RequestReceived), (frame, event)
        else:
            assert isinstance(event, ProtocolViolation | ResponseReceived) and reply is not None, (frame, event)
            body = json.loads(reply)
            assert (body["id"], body["error"]["code"]) == expected[1:], (frame, body)
