"""docs/serve.md stays true: its example relays both profiles to a stdio agent (the reference agent), whole turns
through acp-session's own client with the token; its tables name the code's fields."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.server import ServerLimits, ServerOptions
from acp_session.transport.remote import RemoteDialer
from tests.schema_source import REPO

pytestmark = pytest.mark.anyio

DOC = (REPO / "docs" / "serve.md").read_text()
EXAMPLE = re.search(r"```python\n# example: serve\n(.*?)```", DOC, re.DOTALL)
HOST_EXAMPLE = re.search(r"```python\n# example: host\n(.*?)```", DOC, re.DOTALL)
TOKEN = "doc-example-token-42"


async def test_the_serve_example_relays_both_profiles(tmp_path: Path) -> None:
    assert EXAMPLE is not None
    namespace: dict[str, Any] = {"__name__": "serve_doc_example"}
    exec(compile(EXAMPLE.group(1), "docs/serve.md", "exec"), namespace)
    agent = [sys.executable, "-m", "acp_conformance.agent"]
    async with anyio.create_task_group() as tg:
        url = await tg.start(namespace["serve_agent"], agent, ServerOptions(token=TOKEN))
        for served in (url, "ws" + url.removeprefix("http")):
            dialer = RemoteDialer(served, headers={"Authorization": f"Bearer {TOKEN}"})
            async with ClientBuilder("serve-doc", "1.0").connect_url(dialer) as client:
                conversation = await client.start_conversation(str(tmp_path))
                with anyio.fail_after(30):
                    reply = await conversation.chat_to_completion("hello")
                assert reply.stop_reason == "end_turn" and reply.text
        tg.cancel_scope.cancel()


async def test_the_host_example_answers_a_turn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert HOST_EXAMPLE is not None
    namespace: dict[str, Any] = {"__name__": "host_doc_example"}
    exec(compile(HOST_EXAMPLE.group(1), "docs/serve.md", "exec"), namespace)
    with anyio.fail_after(60):
        text = await namespace["ask_through_a_host"]([sys.executable, "-m", "acp_conformance.agent"], str(tmp_path))
    assert text
    printed = capsys.readouterr().out.splitlines()
    assert any(line.startswith("http://127.0.0.1:") and line.endswith("/acp") for line in printed), printed


def _first_column(heading: str) -> list[str]:
    section = DOC.split(heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)`", section, re.MULTILINE)


def test_the_tables_are_the_code_s() -> None:
    assert _first_column("## Limits") == list(ServerLimits.__dataclass_fields__)
    options = [
        name
        for row in re.findall(r"^\| (`.*?`) \|", DOC.split("## Options", 1)[1].split("\n## ")[0], re.M)
        for name in re.findall(r"`(\w+)`", row)
    ]
    assert options == list(ServerOptions.__dataclass_fields__)
