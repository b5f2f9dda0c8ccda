"""MCP configs that must be refused (issue 41 item 14): a ``.mcp.json`` nested 100 000 deep or too large is a
usage error (exit 2, no traceback); a NUL or another control character in a command, an argument, an
environment variable or header name, or ``=`` in a variable's name, is refused with ``UnsafeMcpServer`` by the
library's typed configs (also one built by hand, before anything is sent) and with exit 2 by the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from acp_session.mcp import McpServerStdio, UnsafeMcpServer, http_server, stdio_server
from acp_session.mcp.config import MAX_CONFIG_BYTES, MAX_CONFIG_DEPTH, McpConfigError, load_mcp_config
from acp_session.schema.types import EnvVariable
from tests.cli.support import run_cli
from tests.client.support import scripted
from tests.client.support import sent as sent_v2

V2_CAPS = {"session": {"prompt": {}, "mcp": {"stdio": {}, "http": {}}}}


def usage_error(tmp_path: Path, *args: str) -> str:
    """The CLI refused ``args`` as a usage error, in one line, without a traceback; its stderr."""
    result = run_cli(tmp_path, "chat", *args, "hi")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "Error:" not in result.stderr.replace("error:", "")
    return result.stderr


def config(tmp_path: Path, servers: object) -> str:
    path = tmp_path / "hostile.mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


def test_a_config_nested_100000_deep_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"mcpServers": {"x": {"command": "sh", "args": ' + "[" * 100_000 + "]" * 100_000 + "}}}")
    assert "nested deeper than" in usage_error(tmp_path, "--mcp-config", str(path))
    with pytest.raises(McpConfigError, match=f"nested deeper than {MAX_CONFIG_DEPTH}"):
        load_mcp_config(path)
    # Brackets inside strings are text, not nesting.
    path.write_text(json.dumps({"mcpServers": {"x": {"command": "sh", "args": ["[" * 1000, "{" * 1000]}}}))
    assert [server.args for server in load_mcp_config(path)] == [["[" * 1000, "{" * 1000]]  # type: ignore[union-attr]


def test_a_config_larger_than_the_bound_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"mcpServers": {}, "padding": "x" * MAX_CONFIG_BYTES}))
    assert "larger than" in usage_error(tmp_path, "--mcp-config", str(path))


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"command": "/bin/sh\u0000-c"}, "the command holds the control character U+0000"),
        ({"command": "sh\u001b[2J"}, "the command holds the control character U+001B"),
        ({"command": "sh", "args": ["-c", "true\u0000rm"]}, "argument 2 holds the control character U+0000"),
        ({"command": "sh", "args": ["\u009b2J"]}, "argument 1 holds the control character U+009B"),
        ({"command": "sh", "env": {"A=B": "x"}}, "'A=B' is not an environment variable name"),
        ({"command": "sh", "env": {"A\u0000B": "x"}}, "holds the control character U+0000"),
        ({"command": "sh", "env": {"A": "x\u0000y"}}, "the value of A holds the control character U+0000"),
        ({"type": "http", "url": "http://127.0.0.1:9/", "headers": {"A": "x\r\nB: y"}}, "U+000D"),
    ],
)
def test_control_characters_in_a_config_are_a_usage_error(tmp_path: Path, entry: object, said: str) -> None:
    stderr = usage_error(tmp_path, "--mcp-config", config(tmp_path, {"x": entry}))
    assert said in stderr and "'x'" in stderr


def test_control_characters_in_an_mcp_option_are_a_usage_error(tmp_path: Path) -> None:
    stderr = usage_error(tmp_path, "--mcp", "x=sh -c 'true\x1b]52;c;eA==\x07'")
    assert "--mcp 'x': argument 2 holds the control character U+001B" in stderr
    assert "the name holds the control character U+001B" in usage_error(tmp_path, "--mcp", "x\x1b=sh")


def test_tabs_and_newlines_in_arguments_and_values_are_kept(tmp_path: Path) -> None:
    path = config(tmp_path, {"x": {"command": "sh", "args": ["-c", "a\n\tb"], "env": {"KEY": "line 1\nline 2"}}})
    (server,) = load_mcp_config(path)
    assert isinstance(server, McpServerStdio) and server.args == ["-c", "a\n\tb"]


def test_the_typed_configs_refuse_control_characters() -> None:
    for call in (
        lambda: stdio_server("x", sys.executable, ["ok", "bad\x00"]),
        lambda: stdio_server("x", sys.executable, env={"A=B": "1"}),
        lambda: stdio_server("x\x1b", sys.executable),
        lambda: http_server("x", "http://127.0.0.1:9/\r\nHost: y"),
    ):
        with pytest.raises(UnsafeMcpServer) as info:
            call()
        assert isinstance(info.value, ValueError) and info.value.server.startswith("x")


@pytest.mark.anyio
async def test_a_config_built_by_hand_is_refused_before_sending(tmp_path: Path) -> None:
    forged = McpServerStdio(name="x", command=sys.executable, args=[], env=[EnvVariable(name="A\x00", value="1")])
    with anyio.fail_after(10):
        async with scripted(tmp_path, capabilities=V2_CAPS) as (client, log):
            with pytest.raises(UnsafeMcpServer, match="U\\+0000"):
                await client.new_session("/w", mcp_servers=[forged])
    assert [m.get("method") for m in sent_v2(log)] == ["initialize"]
