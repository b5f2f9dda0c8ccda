"""The permission handler is typed and the request says which tool call it is about (issue 52 item 1).

A handler that returns the chosen ``PermissionOption`` instead of its ``option_id`` is a mypy error where it is
registered (mypy runs on a snippet here), while the natural code, written from docs/embedding.md, passes; at run
time such an answer is logged with what to return instead and answered cancelled. ``request.tool_call_id`` and
``request.tool_call`` name the tool call a request is about, in protocol versions 1 and 2 alike.
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from acp_session import ClientBuilder
from acp_session.schema import (
    CommandPermissionSubject,
    PermissionOption,
    RequestPermissionRequest,
    ToolCallPermissionSubject,
    ToolCallUpdate,
)
from tests.schema_source import REPO

AGENT = [sys.executable, "-m", "acp_conformance.agent"]

WRONG = """
from acp_session import ClientBuilder
from acp_session.schema import PermissionOption, RequestPermissionRequest


async def first_option(request: RequestPermissionRequest) -> PermissionOption:
    return request.options[0]


def first_option_now(request: RequestPermissionRequest) -> PermissionOption:
    return request.options[0]


ClientBuilder().on_request_permission(first_option)
ClientBuilder().on_request_permission(first_option_now)
"""

RIGHT = """
from acp_session import ClientBuilder, PermissionAnswer, PermissionHandler
from acp_session.schema import (
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedPermissionOutcome,
    ToolCallUpdate,
)


async def ask(request: RequestPermissionRequest) -> str | None:
    call: ToolCallUpdate | None = request.tool_call
    tool_call_id: str | None = request.tool_call_id
    if call is None or tool_call_id is None:
        return None
    return request.options[0].option_id


def refuse(request: RequestPermissionRequest) -> None:
    return None


def select(request: RequestPermissionRequest) -> SelectedPermissionOutcome:
    return SelectedPermissionOutcome(option_id=request.options[0].option_id)


async def respond(request: RequestPermissionRequest) -> RequestPermissionResponse:
    return RequestPermissionResponse(outcome=await select_later(request))


async def select_later(request: RequestPermissionRequest) -> SelectedPermissionOutcome:
    return select(request)


def any_answer(request: RequestPermissionRequest) -> PermissionAnswer:
    return "allow-once"


handler: PermissionHandler = ask
for fn in (ask, refuse, select, respond, any_answer, handler, lambda request: request.options[0].option_id):
    ClientBuilder().on_request_permission(fn)
"""


def test_a_handler_returning_the_option_is_a_mypy_error_and_the_natural_code_passes(tmp_path: Path) -> None:
    (tmp_path / "wrong.py").write_text(WRONG)
    (tmp_path / "right.py").write_text(RIGHT)
    mypy = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), "--no-error-summary"]
    result = subprocess.run(
        [*mypy, str(tmp_path / "wrong.py"), str(tmp_path / "right.py")],
        cwd=REPO,  # the project's mypy configuration (stubs path)
        capture_output=True,
        text=True,
        timeout=600,
    )
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert result.returncode == 1, result.stdout + result.stderr
    assert all(line.startswith(str(tmp_path / "wrong.py")) for line in errors), errors  # the right code passes
    lines = sorted(int(re.match(r".*?wrong\.py:(\d+):", line)[1]) for line in errors)  # type: ignore[index]
    registrations = [n for n, text in enumerate(WRONG.splitlines(), 1) if "on_request_permission" in text]
    assert lines == registrations, errors  # one error at each registration, none elsewhere
    assert all('"on_request_permission"' in line and "PermissionOption" in line for line in errors), errors


def request_with(subject: object) -> RequestPermissionRequest:
    option = PermissionOption(option_id="allow-once", name="Allow", kind="allow_once")
    return RequestPermissionRequest(session_id="s", title="t", options=[option], subject=subject)  # type: ignore[arg-type]


def test_the_request_names_the_tool_call_it_is_about_whatever_its_subject() -> None:
    call = ToolCallUpdate(tool_call_id="tc-1", title="Edit a.py")
    about_call = request_with(ToolCallPermissionSubject(tool_call=call))
    assert about_call.tool_call is call and about_call.tool_call_id == "tc-1"
    command = request_with(CommandPermissionSubject(command="make", cwd="/w", tool_call_id="tc-2"))
    assert command.tool_call is None and command.tool_call_id == "tc-2"
    bare_command = request_with(CommandPermissionSubject(command="make", cwd="/w"))
    assert bare_command.tool_call is None and bare_command.tool_call_id is None
    for nothing in (request_with(None), RequestPermissionRequest(session_id="s", title="t", options=[])):
        assert nothing.tool_call is None and nothing.tool_call_id is None


@pytest.mark.anyio
@pytest.mark.parametrize("version", [1, 2])
async def test_a_real_agents_request_names_its_tool_call_in_both_versions(tmp_path: Path, version: int) -> None:
    seen: list[tuple[str | None, str | None]] = []

    def allow(request: RequestPermissionRequest) -> str:
        seen.append((request.tool_call_id, None if request.tool_call is None else request.tool_call.tool_call_id))
        return request.options[0].option_id

    builder = ClientBuilder("t", "1").protocol_versions(version).on_request_permission(allow)
    async with builder.spawn(AGENT) as client:
        conversation = await client.start_conversation(str(tmp_path))
        response = await conversation.chat_to_completion("/permission")
        assert response.text == "Done: build/ was removed."
        (call,) = response.tool_calls
    assert seen == [(call.tool_call_id, call.tool_call_id)]


@pytest.mark.anyio
async def test_returning_the_option_answers_cancelled_and_says_what_to_return(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def wrong(request: RequestPermissionRequest) -> object:
        return request.options[0]

    builder = ClientBuilder("t", "1").on_request_permission(wrong)  # type: ignore[arg-type]
    with caplog.at_level(logging.ERROR, logger="acp_session.client"):
        async with builder.spawn(AGENT) as client:
            conversation = await client.start_conversation(str(tmp_path))
            response = await conversation.chat_to_completion("/permission")
    assert "build/ was removed" not in response.text  # never an approval
    (record,) = [r for r in caplog.records if r.name == "acp_session.client" and r.levelno == logging.ERROR]
    assert record.exc_info is not None
    assert "returned the PermissionOption 'allow-once': return its option_id" in str(record.exc_info[1])
