"""``ChatFile`` with a v1 agent that writes through the client (issue 21).

``py_v1_agent.py`` (the official Python SDK) answers ``write PATH TEXT`` with ``fs/write_text_file`` and then a
``tool_call_update`` ``completed`` whose content is a v1 diff (V1_AGENTS.md). One write is so reported twice: the
turn gets a ``ChatFile`` with ``source="fs_write"`` when our provider returned, then one with
``source="tool_call"`` after the tool call's ``ChatToolEnd``; same path, same text (docs/conversation.md).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.conversation import ChatDone, ChatEvent, ChatFile, ChatToolEnd
from acp_session.errors import InvalidParams
from acp_session.providers import LocalFileSystem
from acp_session.schema import v1

from .conftest import PY_V1_AGENT

pytestmark = pytest.mark.anyio

PY_AGENT = [sys.executable, str(PY_V1_AGENT)]
TIMEOUT = 15


def files(events: list[ChatEvent]) -> list[ChatFile]:
    return [event for event in events if isinstance(event, ChatFile)]


def order(events: list[ChatEvent]) -> list[str]:
    out: list[str] = []
    for event in events:
        if isinstance(event, ChatToolEnd):
            out.append(f"tool_end:{event.status}")
        elif isinstance(event, ChatFile):
            out.append(f"file:{event.source}")
    return out


async def test_a_write_through_the_client_and_its_diff_are_two_reports_of_one_file(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    new_file, existing = cwd / "new.txt", cwd / "existing.txt"
    existing.write_text("old text")
    with anyio.fail_after(TIMEOUT):
        async with ClientBuilder("v1-files", "1.0").with_file_system().spawn(PY_AGENT) as client:
            conversation = await client.start_conversation(str(cwd))

            events = [event async for event in conversation.chat(f"write {new_file} hello from v1")]
            assert new_file.read_text() == "hello from v1"
            assert order(events) == ["file:fs_write", "tool_end:completed", "file:tool_call"]
            written, reported = files(events)
            assert written == ChatFile(str(new_file), "hello from v1", None, None, "write", None, None, "fs_write")
            assert (reported.path, reported.text, reported.tool_call_id) == (str(new_file), "hello from v1", "call-1")
            assert (reported.operation, reported.source) == ("add", "tool_call")
            assert reported.patch is not None and "+hello from v1" in reported.patch
            done = events[-1]
            assert isinstance(done, ChatDone)
            assert done.response.files == [written, reported]
            assert done.response.file_paths == [str(new_file)]

            response = await conversation.chat_to_completion(f"write {existing} new text")
            assert existing.read_text() == "new text"
            assert [(f.source, f.operation, f.text, f.tool_call_id) for f in response.files] == [
                ("fs_write", "write", "new text", None),
                ("tool_call", "modify", "new text", "call-2"),
            ]
            assert response.file_paths == [str(existing)]


async def test_a_refused_write_gives_no_file(tmp_path: Path) -> None:
    """Outside the session's directories the provider raises (-32602): the agent's tool call fails; no ChatFile."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    outside = tmp_path / "outside.txt"
    with anyio.fail_after(TIMEOUT):
        async with ClientBuilder("v1-files", "1.0").with_file_system().spawn(PY_AGENT) as client:
            conversation = await client.start_conversation(str(cwd))
            events = [event async for event in conversation.chat(f"write {outside} nope")]
            assert not outside.exists()
            assert order(events) == ["tool_end:failed"]
            done = events[-1]
            assert isinstance(done, ChatDone) and done.response.files == []


class Recording:
    """A custom provider: the embedder's own ``write_text_file`` (here: refuse one name, delegate the rest)."""

    def __init__(self) -> None:
        self.disk = LocalFileSystem()
        self.writes: list[str] = []

    def open_session(self, session_id: str, cwd: str, additional_directories: list[str]) -> None:
        self.disk.open_session(session_id, cwd, additional_directories)

    async def read_text_file(self, request: v1.ReadTextFileRequest) -> v1.ReadTextFileResponse:
        return await self.disk.read_text_file(request)

    async def write_text_file(self, request: v1.WriteTextFileRequest) -> v1.WriteTextFileResponse:
        if request.path.endswith("refused.txt"):
            raise InvalidParams(message="this client refuses refused.txt")
        self.writes.append(request.path)
        return await self.disk.write_text_file(request)


async def test_a_custom_provider_reports_its_writes_and_not_its_refusals(tmp_path: Path) -> None:
    provider = Recording()
    kept, refused = tmp_path / "kept.txt", tmp_path / "refused.txt"
    with anyio.fail_after(TIMEOUT):
        async with ClientBuilder("v1-files", "1.0").on_file_system(provider).spawn(PY_AGENT) as client:
            conversation = await client.start_conversation(str(tmp_path))
            ok = await conversation.chat_to_completion(f"write {kept} kept")
            assert provider.writes == [str(kept)] and kept.read_text() == "kept"
            assert [(f.source, f.text) for f in ok.files] == [("fs_write", "kept"), ("tool_call", "kept")]
            no = await conversation.chat_to_completion(f"write {refused} nope")
            assert no.files == [] and not refused.exists()
            assert [call.status for call in no.tool_calls] == ["failed"]


async def test_a_failing_listener_does_not_fail_the_write(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The file was written: the agent is told so even if a file-written listener raises (it is logged)."""
    target = tmp_path / "a.txt"

    def broken(path: str, content: str) -> None:
        raise RuntimeError("listener bug")

    with anyio.fail_after(TIMEOUT), caplog.at_level(logging.ERROR, logger="acp_session.protocol"):
        async with ClientBuilder("v1-files", "1.0").with_file_system().spawn(PY_AGENT) as client:
            conversation = await client.start_conversation(str(tmp_path))
            conversation.session.track.file_listeners.insert(0, broken)
            response = await conversation.chat_to_completion(f"write {target} text")
            assert target.read_text() == "text"
            assert [call.status for call in response.tool_calls] == ["completed"]
            assert response.text == f"wrote {target}"
    assert any("file-written listener failed" in record.message for record in caplog.records)


async def test_the_listener_is_detached_with_the_conversation(tmp_path: Path) -> None:
    with anyio.fail_after(TIMEOUT):
        async with ClientBuilder("v1-files", "1.0").with_file_system().spawn(PY_AGENT) as client:
            conversation = await client.start_conversation(str(tmp_path))
            track = conversation.session.track
            assert track.file_listeners == [conversation._on_file_written]
            assert conversation._detach is not None
            conversation._detach()
            assert track.file_listeners == []


def test_cli_shows_one_file_line_per_write_and_json_has_both_reports(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    argv = [sys.executable, "-m", "acp_session", "chat", "--agent", f"{sys.executable} {PY_V1_AGENT}"]
    argv += ["--cwd", str(tmp_path), "--yes", "--allow-files"]
    env = {**os.environ, "NO_COLOR": "1"}
    text = subprocess.run(
        [*argv, f"write {target} hello"], capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL
    )
    assert text.returncode == 0, text.stderr
    assert text.stdout.count(f"[file] {target}\n") == 1, text.stdout
    assert text.stdout.index("[file]") < text.stdout.index(f"wrote {target}")

    json_run = subprocess.run(
        [*argv, "--json", f"write {target} again"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert json_run.returncode == 0, json_run.stderr
    records = [json.loads(line) for line in json_run.stdout.splitlines()]
    found = [r for r in records if r["event"] == "file"]
    assert [(r["path"], r["text"], r["source"], r["tool_call_id"], r["operation"]) for r in found] == [
        (str(target), "again", "fs_write", None, "write"),
        (str(target), "again", "tool_call", "call-1", "modify"),
    ]
