"""docs/mcp.md's example runs and prints what the doc says; without the ``mcp`` extra the built-in server fails
with ``MissingExtra`` naming it, and the reference agent advertises no MCP transport (issue 28)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.schema_source import REPO

DOC = (REPO / "docs" / "mcp.md").read_text(encoding="utf-8")
BLOCK_MCP = "import sys\nsys.modules['mcp'] = None  # as if the extra were not installed\n"


def run(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "script.py"
    path.write_text(script)
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60, cwd=REPO)


def test_the_builtin_example_prints_what_the_doc_shows(tmp_path: Path) -> None:
    example = re.search(r"```python\n# example: builtin\n(.*?)```", DOC, re.DOTALL)
    shown = re.search(r"It prints:\n\n```text\n(.*?)```", DOC, re.DOTALL)
    assert example is not None and shown is not None
    result = run(example.group(1), tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == shown.group(1)
    assert result.stderr == ""  # the MCP SDK's server leaves the application's logging alone


def test_the_configs_example_builds_what_the_doc_says(tmp_path: Path) -> None:
    example = re.search(r"```python\n# example: configs\n(.*?)```", DOC, re.DOTALL)
    shown = re.search(r"It prints `(.*?)`", DOC)
    assert example is not None and shown is not None
    result = run(example.group(1), tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == shown.group(1) + "\n"


def test_without_the_extra_a_v2_session_with_providers_names_the_extra(tmp_path: Path) -> None:
    script = BLOCK_MCP + (
        "import anyio\n"
        "from acp_session import ClientBuilder\n"
        "from acp_session.client_errors import MissingExtra\n"
        "async def main():\n"
        "    agent = [sys.executable, '-m', 'acp_conformance.agent']  # its own process has the extra\n"
        "    async with ClientBuilder().with_file_system().spawn(agent) as client:\n"
        "        try:\n"
        f"            await client.new_session({str(tmp_path)!r})\n"
        "        except MissingExtra as exc:\n"
        "            print(exc.extra, '|', exc)\n"
        "anyio.run(main)\n"
    )
    result = run(script, tmp_path)
    assert result.returncode == 0, result.stderr
    extra, message = result.stdout.strip().split(" | ")
    assert extra == "mcp" and "pip install 'acp-session[mcp]'" in message


def test_without_the_extra_the_reference_agent_advertises_no_mcp(tmp_path: Path) -> None:
    agent = f"[sys.executable, '-c', {BLOCK_MCP + 'from acp_conformance.agent.__main__ import main; main()'!r}]"
    script = BLOCK_MCP + (
        "import anyio\n"
        "from acp_session import ClientBuilder\n"
        "async def main():\n"
        f"    async with ClientBuilder().spawn({agent}) as client:\n"
        "        print(sorted(client.protocol.mcp_transports))\n"
        "anyio.run(main)\n"
    )
    result = run(script, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
