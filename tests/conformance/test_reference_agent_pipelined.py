"""The reference agent answers messages pipelined after ``initialize`` in the version that ``initialize``
negotiated (issue 50): a ``session/new`` written in the same write as a v1 ``initialize``, before its answer, used
to be answered in the v2 shape, with a boolean config option v1 forbids to a client that did not offer them.

A real agent process on the test's own event loop (``--backend``), one write to its stdin holding both messages;
and the runner's ``pipelined-session-new`` check, which makes the same write, against it and against
``--broken late-version`` (the version fixed only when initialize's task runs, as before the fix).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import pytest

from acp_conformance.runner.run import RunOptions, run

AGENT = [sys.executable, "-m", "acp_conformance.agent"]

OFFERS: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {
    1: (
        {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True},
            "clientInfo": {"name": "pipelining-test", "version": "1"},
        },
        {"mcpServers": []},
    ),
    2: ({"protocolVersion": 2, "info": {"name": "pipelining-test", "version": "1"}}, {}),
}


async def _pipelined(backend: str, version: int, cwd: str) -> list[dict[str, Any]]:
    """The agent's answers to initialize and two session/new, all written at once."""
    init, extra = OFFERS[version]
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd, **extra}},
        {"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {"cwd": cwd, **extra}},
    ]
    answers: dict[Any, dict[str, Any]] = {}
    async with await anyio.open_process([*AGENT, "--backend", backend], stderr=None) as process:
        assert process.stdin is not None and process.stdout is not None
        await process.stdin.send(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        buffer = b""
        with anyio.fail_after(30):
            while len(answers) < 3:
                buffer += await process.stdout.receive()
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    message = json.loads(line)
                    if "method" not in message:
                        answers[message["id"]] = message
        await process.stdin.aclose()
    return [answers[n] for n in (1, 2, 3)]


@pytest.mark.anyio
@pytest.mark.parametrize("version", [1, 2])
async def test_session_new_pipelined_after_initialize_is_answered_in_the_negotiated_version(
    anyio_backend_name: str, version: int, tmp_path: Any
) -> None:
    init, *news = await _pipelined(anyio_backend_name, version, str(tmp_path))
    assert init["result"]["protocolVersion"] == version
    for answer in news:
        result = answer["result"]
        kinds = [option.get("type") for option in result["configOptions"]]
        if version == 1:
            # v1's shape: modes beside the config options, no commands in the answer, and no boolean option for a
            # client that did not offer session.configOptions.boolean.
            assert "modes" in result and "availableCommands" not in result, result
            assert "boolean" not in kinds, result
        else:
            assert "availableCommands" in result and "modes" not in result, result
            assert "boolean" in kinds, result


def test_the_runner_catches_an_agent_that_answers_a_pipelined_request_in_the_wrong_version() -> None:
    """The v1 set's check against ``--broken late-version`` (the v2 set's is in test_conformance.py's mutants; the
    healthy agent passes both in the full runs there and in test_refused_permission.py)."""
    argv = [*AGENT, "--broken", "late-version"]
    (result,) = anyio.run(run, RunOptions(argv, offer=1, only=["pipelined-session-new"], wait=5.0)).results
    assert result.status == "fail"
    assert result.message.startswith("extensibility.mdx: offered 1, a pipelined session/new: availableCommands")
    assert "(and 1 more)" in result.message  # the boolean config option v1 forbids
