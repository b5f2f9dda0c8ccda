"""Events keep wire order with the questions the agent asks (issue 52 item 10), over WebSocket against
``acp-reference-agent --listen``, on asyncio and trio.

The agent sends the tool call, then the permission request about it. The request's handler runs in a task of its
own; the application reads the events in another (a turn's iterator, a ``receive_chunks()`` stream, an async
``on_session_update`` handler), and a reader that awaits anything per event (a UI drawing it) used to see the
question before the tool call it is about. Now the handler is called once the readers have taken the events that
came before the request; a reader that stops reading (here: one waiting for the question's answer) does not
hold the question back.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import anyio.lowlevel
import pytest

from acp_session import ClientBuilder
from acp_session.conversation import ChatToolBegin, ToolCallChunk
from acp_session.schema import (
    RequestPermissionRequest,
    ToolCallPermissionSubject,
    ToolCallUpdate,
    UpdateSessionNotification,
)

from .conftest import Server

pytestmark = pytest.mark.anyio

TURNS = 6  # the old order depended on the event loop's scheduling: each turn is another chance to see it


def websocket(server: Server) -> str:
    return server.url.replace("http://", "ws://", 1)


def about(request: RequestPermissionRequest) -> str:
    """The id of the tool call a question is about (read from its subject: the same on 7b67c45, before the
    ``tool_call_id`` convenience)."""
    subject = request.subject
    assert isinstance(subject, ToolCallPermissionSubject)
    return subject.tool_call.tool_call_id


def name(event: object) -> str:
    tool_call = getattr(event, "tool_call", None)
    return f"{type(event).__name__} {tool_call.tool_call_id}" if tool_call is not None else type(event).__name__


async def test_a_turns_reader_sees_the_tool_call_before_the_question_about_it(
    start_server: Callable[..., Server],
) -> None:
    server = start_server()
    log: list[str] = []

    def answer(request: RequestPermissionRequest) -> str:
        log.append(f"question {about(request)}")
        return request.options[0].option_id

    async with ClientBuilder("order", "1.0").on_request_permission(answer).connect_url(websocket(server)) as client:
        conversation = await client.start_conversation("/")
        for _ in range(TURNS):
            log.clear()
            async for event in conversation.chat("/permission"):
                log.append(name(event))
                await anyio.lowlevel.checkpoint()  # a UI that awaits as it shows each event
            (begin,) = [entry for entry in log if entry.startswith("ChatToolBegin")]
            tool_call_id = begin.split()[1]
            assert log[:3] == ["ChatStart", begin, f"question {tool_call_id}"], log
            assert log[-1] == "ChatDone"


async def test_a_chunk_streams_reader_and_an_update_handler_see_the_tool_call_before_the_question(
    start_server: Callable[..., Server],
) -> None:
    server = start_server()
    log: list[str] = []

    def answer(request: RequestPermissionRequest) -> str:
        log.append(f"question {about(request)}")
        return request.options[0].option_id

    async def on_update(note: UpdateSessionNotification) -> None:
        if isinstance(note.update, ToolCallUpdate) and note.update.title:  # the tool call's first report
            await anyio.lowlevel.checkpoint()
            log.append(f"update {note.update.tool_call_id}")

    builder = ClientBuilder("order", "1.0").on_request_permission(answer).on_session_update(on_update)
    async with builder.connect_url(websocket(server)) as client:
        conversation = await client.start_conversation("/")
        async with anyio.create_task_group() as tg, conversation.receive_chunks() as chunks:

            async def read() -> None:
                async for chunk in chunks:
                    await anyio.lowlevel.checkpoint()
                    if isinstance(chunk, ToolCallChunk):
                        log.append(f"chunk {chunk.tool_call.tool_call_id}")

            tg.start_soon(read)
            for _ in range(TURNS):
                log.clear()
                await conversation.chat_to_completion("/permission")
                question = next(entry for entry in log if entry.startswith("question"))
                tool_call_id = question.split()[1]
                before = log[: log.index(question)]
                assert sorted(before) == [f"chunk {tool_call_id}", f"update {tool_call_id}"], log
            chunks.close()


async def test_a_reader_that_waits_for_the_answer_does_not_hold_the_question_back(
    start_server: Callable[..., Server],
) -> None:
    server = start_server()
    answered = anyio.Event()

    def answer(request: RequestPermissionRequest) -> str:
        answered.set()
        return request.options[0].option_id

    async with ClientBuilder("order", "1.0").on_request_permission(answer).connect_url(websocket(server)) as client:
        conversation = await client.start_conversation("/")
        with anyio.fail_after(30):  # "it ended": the question was asked although this reader stopped reading
            async for event in conversation.chat("/permission"):
                if isinstance(event, ChatToolBegin):
                    await answered.wait()
