"""Elicitation through ``acp-session serve``: the host offers the agent form and URL elicitation and relays the
agent's ``elicitation/create`` to the clients attached to the session that offer the mode, like a permission
request: asked again of such a client that attaches while it waits, the first answer wins and the other clients'
requests are withdrawn (``$/cancel_request``), after the timeout the ``cancel`` action. The reference agent's
``/elicit`` asks a form question and says which action came back. Over Streamable HTTP and WebSocket, the host on
the test's backend.

Rules: ACP2-022 / ACP2-023 (the session reports ``requires_action`` while the question waits, then ``running``),
ACP2-024 (a question no longer needed by cancelled work is withdrawn), ACP2-089 (an action the host does not know
is passed on as it came)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder, Conversation
from acp_session.schema.types import (
    CompleteElicitationNotification,
    CreateElicitationRequest,
    ElicitationAcceptAction,
    ElicitationDeclineAction,
    ElicitationFormMode,
    ElicitationUrlMode,
    StateUpdate,
    UnknownCreateElicitationResponse,
    UpdateSessionNotification,
)

from . import conftest
from .conftest import REFERENCE_AGENT, Host, turn_in

pytestmark = pytest.mark.anyio

QUESTION = "What should I call this session?"


def _answered(action: str) -> str:
    return f"You answered the question with {action!r}."


class Asked(conftest.Asked[CreateElicitationRequest, Any]):
    """An elicitation handler that accepts with a name unless told otherwise."""

    def __init__(self, answer: Any = None, *, wait: bool = False) -> None:
        super().__init__(answer if answer is not None else ElicitationAcceptAction(content={"name": "Ada"}), wait=wait)


def _client(asked: Asked | None, states: list[str] | None = None) -> ClientBuilder:
    builder = ClientBuilder("elicit-test", "1.0")
    if asked is not None:
        builder.on_elicitation(asked, modes=("form",))
    if states is not None:

        def on_update(note: UpdateSessionNotification) -> None:
            if isinstance(note.update, StateUpdate):
                states.append(note.update.state)

        builder.on_session_update(on_update)
    return builder


@pytest.mark.parametrize("profile", ["http", "ws"])
async def test_an_elicitation_goes_to_the_clients_that_offer_its_mode_and_the_first_answer_wins(
    start_host: Callable[..., Host], tmp_path: Path, profile: str, anyio_backend: str
) -> None:
    host = start_host(backend=anyio_backend)
    url = host.url_for(profile)
    cwd = str(tmp_path)
    first, second = Asked(wait=True), Asked(ElicitationDeclineAction(), wait=True)
    states: list[str] = []
    with anyio.fail_after(90):
        async with (
            _client(first, states).connect_url(url) as one,
            _client(second).connect_url(url) as two,
            _client(None).connect_url(url) as three,
        ):
            conversation = await one.start_conversation(cwd)
            session_id = conversation.session_id
            assert session_id is not None
            await Conversation.resume(two, session_id, cwd, replay_from=None)
            watching = await Conversation.resume(three, session_id, cwd, replay_from=None)
            async with anyio.create_task_group() as tg:
                replies = turn_in(tg, conversation, "/elicit")
                await first.came.wait()
                await second.came.wait()
                second.go.set()  # the second client declines first: its answer wins, the first's is withdrawn
            assert replies[0].text == _answered("decline")
            assert first.withdrawn == 1 and second.withdrawn == 0
            [request] = first.requests
            assert isinstance(request, ElicitationFormMode)
            assert request.session_id == session_id and request.message == QUESTION
            assert "name" in request.requested_schema.properties
            with anyio.fail_after(30):  # the third client's feed sends it the turn too; it was not asked
                while _answered("decline") not in [m.text for m in watching.messages()]:
                    await anyio.sleep(0.05)
            # ACP2-022, ACP2-023: requires_action while the question waited, running again after it.
            waiting = states.index("requires_action")
            assert "running" in states[waiting + 1 :] and states[-1] == "idle"
    asked = host.wait_for("elicitation_asked", sessionId=session_id)
    assert asked["mode"] == "form"
    answered = host.wait_for("elicitation_answered", sessionId=session_id)
    assert answered["action"] == "decline" and answered["client"]


@pytest.mark.parametrize("profile", ["http", "ws"])
async def test_an_elicitation_asked_while_nobody_can_answer_is_asked_again_on_attach(
    start_host: Callable[..., Host], tmp_path: Path, profile: str, anyio_backend: str
) -> None:
    host = start_host(backend=anyio_backend)
    url = host.url_for(profile)
    cwd = str(tmp_path)
    # ACP2-089: an action the host does not know reaches the agent as the client sent it.
    later = Asked(UnknownCreateElicitationResponse({"action": "_snoozed", "until": "tomorrow"}))
    with anyio.fail_after(90):
        async with _client(None).connect_url(url) as client:
            conversation = await client.start_conversation(cwd)
            session_id = conversation.session_id
            assert session_id is not None
            async with anyio.create_task_group() as tg:
                replies = turn_in(tg, conversation, "/elicit")
                await host.event("elicitation_asked", sessionId=session_id)
                async with _client(later).connect_url(url) as late:
                    await Conversation.resume(late, session_id, cwd, replay_from=None)
                    await later.came.wait()
                    with anyio.fail_after(30):
                        while not replies:
                            await anyio.sleep(0.05)
            assert replies[0].text == _answered("_snoozed")
            assert len(later.requests) == 1
    assert host.wait_for("elicitation_answered", sessionId=session_id)["action"] == "_snoozed"


async def test_an_elicitation_nobody_answers_in_time_is_cancelled(
    start_host: Callable[..., Host], tmp_path: Path, anyio_backend: str
) -> None:
    host = start_host("--permission-timeout", "0.5", backend=anyio_backend)
    with anyio.fail_after(60):
        async with _client(None).connect_url(host.url) as client:
            conversation = await client.start_conversation(str(tmp_path))
            reply = await conversation.chat_to_completion("/elicit")
    assert reply.text == _answered("cancel")
    answered = host.wait_for("elicitation_answered", sessionId=conversation.session_id)
    assert answered["by"] == "policy" and answered["action"] == "cancel"


async def test_an_elicitation_nobody_answers_is_declined_under_deny_all(
    start_host: Callable[..., Host], tmp_path: Path, anyio_backend: str
) -> None:
    host = start_host("--permission-timeout", "0.5", "--deny-all", backend=anyio_backend)
    with anyio.fail_after(60):
        async with _client(None).connect_url(host.url) as client:
            conversation = await client.start_conversation(str(tmp_path))
            reply = await conversation.chat_to_completion("/elicit")
    assert reply.text == _answered("decline")
    answered = host.wait_for("elicitation_answered", sessionId=conversation.session_id)
    assert answered["by"] == "policy" and answered["action"] == "decline"


async def test_a_cancelled_turn_withdraws_its_elicitation_from_the_clients(
    start_host: Callable[..., Host], tmp_path: Path, anyio_backend: str
) -> None:
    host = start_host(backend=anyio_backend)
    asked = Asked(wait=True)
    with anyio.fail_after(60):
        async with _client(asked).connect_url(host.url) as client:
            conversation = await client.start_conversation(str(tmp_path))
            assert conversation.session_id is not None
            async with anyio.create_task_group() as tg:
                replies = turn_in(tg, conversation, "/elicit")
                await asked.came.wait()
                await client.session(conversation.session_id).cancel_active_work()
            # ACP2-024: the agent withdrew the question of the cancelled work; the host withdrew it from the client.
            assert replies[0].stop_reason == "cancelled"
            assert asked.withdrawn == 1


async def test_without_elicitation_the_agent_is_not_offered_it(
    start_host: Callable[..., Host], tmp_path: Path, anyio_backend: str
) -> None:
    host = start_host("--no-elicitation", backend=anyio_backend)
    asked = Asked()
    with anyio.fail_after(60):
        async with _client(asked).connect_url(host.url) as client:
            conversation = await client.start_conversation(str(tmp_path))
            reply = await conversation.chat_to_completion("/elicit")
    assert reply.text == "This client offers no form elicitation, so I did not ask."
    assert not asked.requests


@pytest.mark.parametrize("profile", ["http", "ws"])
async def test_a_v1_client_is_asked_a_v2_agents_elicitation(
    start_host: Callable[..., Host], tmp_path: Path, profile: str, anyio_backend: str
) -> None:
    """A client that offers only protocol version 1 (form elicitation in its ``clientCapabilities``), served with
    the agent speaking version 2: asked in the shape both versions share, its answer reaches the agent."""
    host = start_host(backend=anyio_backend)
    assert host.wait_for("agent_started")["protocolVersion"] == 2
    asked = Asked()
    with anyio.fail_after(60):
        async with _client(asked).protocol_versions(1).connect_url(host.url_for(profile)) as client:
            assert client.protocol.version == 1
            conversation = await client.start_conversation(str(tmp_path))
            reply = await conversation.chat_to_completion("/elicit")
    assert reply.stop_reason == "end_turn" and reply.text == _answered("accept")
    [request] = asked.requests
    assert isinstance(request, ElicitationFormMode) and request.message == QUESTION


@pytest.mark.parametrize("profile", ["http", "ws"])
async def test_a_url_elicitation_and_its_completion_reach_the_clients_that_take_urls(
    start_host: Callable[..., Host], tmp_path: Path, profile: str, anyio_backend: str
) -> None:
    """``/elicit url``: the URL elicitation goes to the client that offers URL mode (not to the one that offers
    only forms), and the agent's ``elicitation/complete`` for it reaches that client."""
    host = start_host(backend=anyio_backend)
    url = host.url_for(profile)
    cwd = str(tmp_path)
    urls, forms = Asked(), Asked()
    completed: list[CompleteElicitationNotification] = []
    done = anyio.Event()

    def on_complete(note: CompleteElicitationNotification) -> None:
        completed.append(note)
        done.set()

    taking_urls = ClientBuilder("elicit-url", "1.0").on_elicitation(urls, modes=("url",))
    with anyio.fail_after(60):
        async with (
            taking_urls.on_elicitation_complete(on_complete).connect_url(url) as one,
            _client(forms).connect_url(url) as two,
        ):
            conversation = await one.start_conversation(cwd)
            session_id = conversation.session_id
            assert session_id is not None
            await Conversation.resume(two, session_id, cwd, replay_from=None)
            reply = await conversation.chat_to_completion("/elicit url")
            assert reply.text == _answered("accept")
            await done.wait()
    [request] = urls.requests
    assert isinstance(request, ElicitationUrlMode) and request.url == "https://example.invalid/sign-in"
    assert [note.elicitation_id for note in completed] == [request.elicitation_id]
    assert not forms.requests
    assert host.wait_for("elicitation_asked", sessionId=session_id)["mode"] == "url"


async def test_a_v1_agents_elicitation_reaches_a_v2_client(
    start_host: Callable[..., Host], tmp_path: Path, anyio_backend: str
) -> None:
    """The host offers elicitation to a version 1 agent too (the library's adapter reads its request into the
    model's words): the reference agent speaking only version 1 asks, a version 2 client answers."""
    host = start_host(agent=f"{REFERENCE_AGENT} --protocol-versions 1", backend=anyio_backend)
    assert host.wait_for("agent_started")["protocolVersion"] == 1
    asked = Asked()
    with anyio.fail_after(60):
        async with _client(asked).connect_url(host.url) as client:
            conversation = await client.start_conversation(str(tmp_path))
            reply = await conversation.chat_to_completion("/elicit")
    assert reply.text == _answered("accept")
    [request] = asked.requests
    assert isinstance(request, ElicitationFormMode) and request.session_id == conversation.session_id
