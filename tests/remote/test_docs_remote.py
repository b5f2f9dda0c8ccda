"""docs/remote.md stays true: its example runs against the TS SDK's server over both profiles."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from acp_session.transport.remote import RemoteLimits
from tests.schema_source import REPO

from .conftest import TsServer

pytestmark = pytest.mark.anyio

DOC = (REPO / "docs" / "remote.md").read_text()
EXAMPLE = re.search(r"```python\n# example: remote\n(.*?)```", DOC, re.DOTALL)


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_the_remote_example_runs(ts_server: TsServer, scheme: str, tmp_path: Path) -> None:
    assert EXAMPLE is not None
    namespace: dict[str, Any] = {"__name__": "remote_doc_example"}
    exec(compile(EXAMPLE.group(1), "docs/remote.md", "exec"), namespace)
    url = ts_server.url if scheme == "http" else ts_server.ws_url
    assert await namespace["ask"](url, "doc-token-1234", str(tmp_path)) == "You said: hello"
    assert {r["authorization"] for r in ts_server.requests()} == {"Bearer doc-token-1234"}


def test_the_limits_table_is_the_code_s() -> None:
    rows = re.findall(r"^\| `(\w+)` \| ", DOC, re.MULTILINE)
    assert rows == [name for name in RemoteLimits.__dataclass_fields__ if not name.startswith("_")]
