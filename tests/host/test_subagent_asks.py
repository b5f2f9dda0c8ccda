"""A subagent's permission requests and its cancellation through ``acp-session serve``, with the reference agent's
``/subagent ask`` (the child asks permission for its tool call) and ``/subagent slow`` (the child works 30 s).

The request names the child session, so it is asked only of the clients attached to the parent that asked for
subagent updates (they know the child; over Streamable HTTP they read the child's stream, where it goes), with the
parent's rules: asked again of such a client that attaches while it waits, the first answer wins and the other
clients' requests are withdrawn (``$/cancel_request``, ACP2-001), the policy answers after the timeout. A
``session/cancel`` with the child's id reaches the agent and cancels the child alone: the parent's turn goes on.
Over Streamable HTTP and WebSocket, the host on the test's backend."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder, Conversation
from acp_session.schema.types import RequestPermissionRequest

from . import conftest
from .conftest import Host, turn_in

pytestmark = pytest.mark.anyio

ALLOWED = "The subagent found 2 files."
NOT_ALLOWED = "The subagent was not allowed to list the files."


class Asked(conftest.Asked[RequestPermissionRequest, str]):
    """A permission handler that allows once unless told otherwise."""

    def __init__(self, answer: str = "allow-once", *, wait: bool = False) -> None:
        super().__init__(answer, wait=wait)


def _client(asked: Asked, *, subagents: bool) -> ClientBuilder:
    return ClientBuilder("sub-asks", "1.0").with_subagents(subagents).on_request_permission(asked)


def _child_of(conversation: Conversation) -> str:
    (child,) = conversation.subagents
    return child


@pytest.mark.parametrize("profile", ["http", "ws"])
async def test_a_subagents_permission_goes_to_the_clients_that_asked_for_subagents(
    start_host: Callable[..., Host], tmp_path: Path, profile: str, anyio_backend: str
) -> None:
    host = start_host(backend=anyio_backend)
    url = host.url_for(profile)
    cwd = str(tmp_path)
    first, second, plain = Asked(wait=True), Asked(wait=True), Asked()
    with anyio.fail_after(90):
        async with (
            _client(first, subagents=True).connect_url(url) as one,
            _client(second, subagents=True).connect_url(url) as two,
            _client(plain, subagents=False).connect_url(url) as three,
        ):
            conversation = await one.start_conversation(cwd)
            session_id = conversation.session_id
            assert session_id is not None
            other = await Conversation.resume(two, session_id, cwd, replay_from=None)
            await Conversation.resume(three, session_id, cwd, replay_from=None)
            async with anyio.create_task_group() as tg:
                replies = turn_in(tg, conversation, "/subagent ask")
                await first.came.wait()
                await second.came.wait()
                second.go.set()  # the second client answers first: its answer wins, the first's is withdrawn
            [reply] = replies
            assert reply.stop_reason == "end_turn" and reply.text == ALLOWED
            child = _child_of(conversation)
            assert [r.session_id for r in first.requests] == [child] == [r.session_id for r in second.requests]
            assert first.withdrawn == 1 and second.withdrawn == 0
            assert not plain.requests  # it did not ask for subagents: it knows no child to answer for
            assert _child_of(other) == child
    asked = host.wait_for("permission_asked", sessionId=session_id)
    assert asked["subagent"] == child
    answered = host.wait_for("permission_answered", sessionId=session_id)
    assert answered["optionId"] == "allow-once" and answered["client"]
    assert len([e for e in host.events if e["event"] == "permission_answered"]) == 1


@pytest.mark.parametrize("profile", ["http", "ws"])
async def test_a_subagents_permission_waits_for_a_client_that_can_answer_it(
    start_host: Callable[..., Host], tmp_path: Path, profile: str, anyio_backend: str
) -> None:
    host = start_host(backend=anyio_backend)
    url = host.url_for(profile)
    cwd = str(tmp_path)
    plain, later = Asked(), Asked("reject-once")
    with anyio.fail_after(90):
        async with _client(plain, subagents=False).connect_url(url) as client:
            conversation = await client.start_conversation(cwd)
            session_id = conversation.session_id
            assert session_id is not None
            async with anyio.create_task_group() as tg:
                replies = turn_in(tg, conversation, "/subagent ask")
                await host.event("permission_asked", sessionId=session_id)
                # Asked again of the client that attaches and can answer it.
                async with _client(later, subagents=True).connect_url(url) as late:
                    watching = await Conversation.resume(late, session_id, cwd)
                    await later.came.wait()
                    with anyio.fail_after(30):
                        while not replies:
                            await anyio.sleep(0.05)
                    assert [r.session_id for r in later.requests] == [_child_of(watching)]
            assert replies[0].text == NOT_ALLOWED
            assert not plain.requests
    answered = host.wait_for("permission_answered", sessionId=session_id)
    assert answered["optionId"] == "reject-once"


async def test_a_subagents_permission_nobody_can_answer_is_answered_by_the_policy(
    start_host: Callable[..., Host], tmp_path: Path, anyio_backend: str
) -> None:
    host = start_host("--permission-timeout", "0.5", "--approve-reads", backend=anyio_backend)
    plain = Asked()
    with anyio.fail_after(60):
        async with _client(plain, subagents=False).connect_url(host.url) as client:
            conversation = await client.start_conversation(str(tmp_path))
            reply = await conversation.chat_to_completion("/subagent ask")
    assert reply.text == NOT_ALLOWED and not plain.requests
    answered = host.wait_for("permission_answered", sessionId=conversation.session_id)
    assert answered["by"] == "policy" and answered["outcome"] == "cancelled"


@pytest.mark.parametrize("profile", ["http", "ws"])
async def test_cancelling_a_subagent_alone_leaves_the_parents_turn_going(
    start_host: Callable[..., Host], tmp_path: Path, profile: str, anyio_backend: str
) -> None:
    host = start_host(backend=anyio_backend)
    url = host.url_for(profile)
    with anyio.fail_after(20):  # the child works 30 s unless cancelled
        async with ClientBuilder("sub-cancel", "1.0").with_subagents().connect_url(url) as client:
            conversation = await client.start_conversation(str(tmp_path))
            turn = conversation.chat("/subagent slow")
            texts: list[str] = []
            cancelled = False
            async for event in turn:
                if not cancelled and conversation.subagents:
                    child = _child_of(conversation)
                    assert conversation.subagents[child].cancellable
                    await client.session(child).cancel_active_work()
                    cancelled = True
                texts.append(getattr(event, "text", "") or "")
            reply = event.response
            assert cancelled
            assert reply.stop_reason == "end_turn"  # the parent's turn went on and ended as usual
            assert conversation.messages()[-1].text == "The subagent was cancelled."
            assert conversation.subagents[child].state.state == "idle"
