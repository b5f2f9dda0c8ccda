"""A turn ends however its messages interleave (issue 16, 1).

The ``session/prompt`` answer may come before or after the ``user_message`` update, and both before or after the
turn's chunks and its idle ``state_update`` (the schema says so for ``messageId``); the user message may never
come at all (an agent bug a client must survive). The answer is matched to the updates in wire order, so every
order ends the turn with the right text, stop reason and history, and live state equals a replay of the wire.
"""

from __future__ import annotations

import json
import random
import sys
from itertools import permutations
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.conversation import IdleTimeout, TurnTimeout
from acp_session.conversation.entities import Message
from acp_session.errors import InternalError, RequestCancelled
from acp_session.transcript import load_transcript, read_transcript

pytestmark = pytest.mark.anyio

AGENT = Path(__file__).parent / "agents" / "order_agent.py"
TEXT = "w0 w1 w2 "


def interleavings(with_user: bool) -> list[list[str]]:
    """Every order of the answer, the user message, the chunks and the idle with the chunks before the idle."""
    tokens = ["answer", "user", "chunks", "idle"] if with_user else ["answer", "chunks", "idle"]
    return [list(p) for p in permutations(tokens) if p.index("chunks") < p.index("idle")]


ALL_ORDERS = interleavings(True) + interleavings(False)
WORST = [["answer", "chunks", "idle", "user"], ["answer", "chunks", "idle"], ["chunks", "idle", "answer"]]


async def run_orders(tmp_path: Path, orders: list[list[str]]) -> None:
    """Run one prompt per order on one session and check each turn; then compare live state with the replay."""
    (tmp_path / "orders.json").write_text(json.dumps(orders))
    transcript = tmp_path / "wire.jsonl"
    builder = ClientBuilder().record_transcript(transcript)
    argv = [sys.executable, str(AGENT), str(tmp_path / "orders.json")]
    async with builder.spawn(argv) as client:
        conversation = await client.start_conversation(str(tmp_path))
        for k, order in enumerate(orders):
            with anyio.fail_after(5):
                if "answer" not in order:
                    with pytest.raises((InternalError, RequestCancelled)):
                        await conversation.chat_to_completion(f"p{k}")
                    continue
                response = await conversation.chat_to_completion(f"p{k}")
                await conversation.wait_for_idle()
            assert (response.text, response.stop_reason, response.message_id) == (TEXT, "end_turn", f"u{k}"), order
            mine = [m for m in conversation.state.timeline if isinstance(m, Message) and m.message_id[1:] == str(k)]
            # History holds what the agent reported, where it reported it (the user message where it came).
            expected = [
                ("user", f"p{k}") if token == "user" else ("agent", TEXT)
                for token in order
                if token in ("user", "chunks")
            ]
            assert [(m.role, m.text) for m in mine] == expected, order
        assert conversation.is_idle and not conversation.pending_turns
    assert load_transcript(transcript) == conversation.state


async def test_every_interleaving_of_answer_user_message_chunks_and_idle(tmp_path: Path) -> None:
    await run_orders(tmp_path, ALL_ORDERS)


async def test_error_answers_and_a_cancelled_prompt_fail_only_their_turn(tmp_path: Path) -> None:
    orders = [["error"], ["answer", "user", "chunks", "idle"], ["cancelled"], ["chunks", "idle", "answer"]]
    await run_orders(tmp_path, orders)


async def test_a_thousand_random_runs_of_the_worst_orders_never_hang(tmp_path: Path) -> None:
    rng = random.Random(16)
    orders = [rng.choice(WORST + ALL_ORDERS[:2]) for _ in range(1000)]
    await run_orders(tmp_path, orders)


async def test_time_limits_on_chat_to_completion_and_wait_for_idle(tmp_path: Path) -> None:
    """A turn the agent never ends: ``chat_to_completion(timeout=)`` cancels it and raises ``TurnTimeout``;
    ``wait_for_idle(timeout=)`` raises ``IdleTimeout`` and cancels nothing."""
    (tmp_path / "orders.json").write_text(json.dumps([["user", "chunks"]]))
    transcript = tmp_path / "wire.jsonl"
    argv = [sys.executable, str(AGENT), str(tmp_path / "orders.json")]
    with anyio.fail_after(10):
        async with ClientBuilder().record_transcript(transcript).spawn(argv) as client:
            conversation = await client.start_conversation(str(tmp_path))
            await conversation.wait_for_idle(timeout=0.05)  # idle: returns at once
            with pytest.raises(TurnTimeout) as info:
                await conversation.chat_to_completion("never ends", timeout=0.3)
            assert not info.value.turn.finished
            with pytest.raises(IdleTimeout):
                await conversation.wait_for_idle(timeout=0.1)
    sent_methods = [e.message.get("method") for e in read_transcript(transcript) if e.direction == "out"]
    assert sent_methods[-1] == "session/cancel"
