"""Shared helpers: spawn the scripted agent, read what the client sent, validate it against the schema."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from acp_session import ClientBuilder, ClientConnection
from tests.schema_source import require_schema_dir

AGENT = Path(__file__).parent / "agents" / "scripted_agent.py"


def agent_argv(log: Path, **options: Any) -> list[str]:
    return [sys.executable, str(AGENT), str(log), json.dumps(options)]


@asynccontextmanager
async def scripted(
    tmp_path: Path, builder: ClientBuilder | None = None, **options: Any
) -> AsyncIterator[tuple[ClientConnection, Path]]:
    log = tmp_path / "agent.log"
    async with (builder or ClientBuilder("test-client", "1.0")).spawn(agent_argv(log, **options)) as client:
        yield client, log
    if log.exists() and log.read_text().strip():
        assert_valid(sent(log))  # every test: whatever the client sent fits the official schema


def sent(log: Path) -> list[dict[str, Any]]:
    """Every message the client sent, in order (the agent logs each line it read)."""
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


@cache
def _validators() -> tuple[Any, dict[str, Any]]:
    schema = json.loads((require_schema_dir() / "schema.json").read_text())
    defs = schema["$defs"]
    # The document's own "Client" and "ProtocolLevel" branches: everything a client may send.
    envelope = {"$defs": defs, "anyOf": [schema["anyOf"][1], schema["anyOf"][2]]}
    by_method = {d["x-method"]: name for name, d in defs.items() if "x-method" in d and d.get("x-side") == "agent"}
    params = {m: jsonschema.Draft202012Validator({"$defs": defs, "$ref": f"#/$defs/{n}"}) for m, n in by_method.items()}
    return jsonschema.Draft202012Validator(envelope), params


def assert_valid(messages: list[dict[str, Any]]) -> None:
    """Each message fits the schema's client envelopes, and schema methods' params fit their own definition."""
    envelope, params = _validators()
    assert messages, "the client sent nothing"
    for message in messages:
        envelope.validate(message)
        method = message.get("method")
        if method in params:
            params[method].validate(message.get("params"))


def methods(log: Path) -> list[str]:
    return [m.get("method", "<response>") for m in sent(log)]
