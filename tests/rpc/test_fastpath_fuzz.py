"""Hypothesis: a stream of chunk notifications with newlines inserted, removed and duplicated, sent in one go
through a real Connection (the one-pass typed path included), delivers exactly the lines that are valid
notifications on their own, in order, and reports every other non-blank line (-32700 or -32600).

The oracle splits the stream on newlines and asks ``json`` about each line, as the per-frame rules say.
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_session import codec
from acp_session.rpc import Connection
from acp_session.schema import types as t
from acp_session.transport import memory_pair
from tests.helpers.raw_end import RawEnd

EXAMPLES = int(os.environ.get("ACP_FUZZ_EXAMPLES", "150"))  # per backend; `make fuzz` runs many more


def line(text: str) -> bytes:
    note = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "s",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "messageId": "m",
                "content": {"type": "text", "text": text},
            },
        },
    }
    return json.dumps(note, separators=(",", ":")).encode()


def oracle(stream: bytes) -> tuple[list[str], int]:
    """The texts delivered in order, and how many lines must be reported: -32700 for what is not JSON,
    -32600 for JSON that is not a message (a cut can leave an inner object or a string on a line)."""
    texts, errors = [], 0
    for raw in stream.split(b"\n")[:-1]:  # the stream ends with a newline
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            errors += 1
            continue
        if isinstance(value, dict) and value.get("jsonrpc") == "2.0" and value.get("method") == "session/update":
            texts.append(value["params"]["update"]["content"]["text"])
        else:
            errors += 1
    return texts, errors


@st.composite
def streams(draw: Any) -> bytes:
    texts = draw(st.lists(st.text(alphabet='ab é{}\\"', max_size=6), min_size=1, max_size=30))
    data = bytearray(b"\n".join(line(text) for text in texts) + b"\n")
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(["insert", "delete", "double"]))
        if action == "insert":
            data[at:at] = b"\n"
        elif action == "delete" and data[at : at + 1] == b"\n" and at < len(data) - 1:
            del data[at]
        elif action == "double":
            nl = data.find(b"\n", at)
            if nl >= 0:
                data[nl:nl] = b"\n"
    return bytes(data)


async def deliver(stream: bytes) -> tuple[list[str], int]:
    ours, theirs = memory_pair()
    received: list[str] = []
    errors: list[Exception] = []
    async with Connection(ours, on_frame_error=errors.append) as conn:
        decode = codec.decoder(t.UpdateSessionNotification)
        conn.on_notification("session/update", lambda n: received.append(n.update.content.text), decode)
        raw = RawEnd(theirs)
        await raw.send(stream)
        await raw.send(line("END") + b"\n")
        with anyio.fail_after(5):
            while not received or received[-1] != "END":
                await anyio.sleep(0.001)
    return received[:-1], len(errors)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams())
def test_each_line_is_judged_on_its_own(backend: str, stream: bytes) -> None:
    expected_texts, expected_errors = oracle(stream)
    texts, errors = anyio.run(deliver, stream, backend=backend)
    assert texts == expected_texts
    assert errors == expected_errors
