"""A real registry ``npx`` entry, resolved and started: ``pi-acp`` (a light adapter, pinned) answers
``initialize`` through the command the registry code builds. Needs node's npx and the npm registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp_session import ClientBuilder
from acp_session.registry import bundled_registry, find_agent

PINNED = "0.0.34"


@pytest.mark.anyio
async def test_npx_entry_resolves_and_completes_initialize(tmp_path: Path) -> None:
    # The bundled snapshot's own pi-acp entry, pinned to a version known to answer without pi installed.
    entry = find_agent(bundled_registry(), "pi-acp")
    assert entry.distribution.npx is not None and entry.distribution.npx.package.startswith("pi-acp@")
    agent = {
        "id": entry.id,
        "name": entry.name,
        "version": PINNED,
        "description": entry.description,
        "distribution": {"npx": {"package": f"pi-acp@{PINNED}"}},
    }
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps({"version": "1.0.0", "agents": [agent]}))
    async with ClientBuilder().spawn("pi-acp", registry=registry, initialize_timeout=120) as client:
        info = client.agent.info
        assert info.name == "pi-acp" and info.version == PINNED
        assert client.auth.login_methods  # it advertises its terminal login, as the registry requires
