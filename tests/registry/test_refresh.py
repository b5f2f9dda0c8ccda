"""schema/refresh_registry.py: the bundled snapshot refreshed from a registry.json or a registry checkout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from acp_session.registry import load_registry
from tests.registry.support import serve

SCRIPT = Path(__file__).resolve().parents[2] / "schema" / "refresh_registry.py"
AGENT = {
    "id": "b-agent",
    "name": "B",
    "version": "2.0.0",
    "description": "d",
    "distribution": {"npx": {"package": "b@2"}},
}


def refresh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_refresh_from_a_url_keeps_the_login_kinds_and_dates_the_snapshot(tmp_path: Path) -> None:
    output = tmp_path / "snapshot.json"
    output.write_text(
        json.dumps(
            {"version": "1.0.0", "agents": [], "_snapshot": {"date": "x", "authMethods": {"b-agent": ["agent"]}}}
        )
    )
    with serve(tmp_path / "www") as www:
        url = www.put("registry.json", json.dumps({"version": "1.0.0", "agents": [AGENT]}).encode())
        result = refresh("--from", url, "--output", str(output), "--date", "2027-01-02")
    assert result.returncode == 0, result.stderr
    registry = load_registry(output)
    assert [a.id for a in registry.agents] == ["b-agent"]
    assert registry.snapshot is not None and registry.snapshot.date == "2027-01-02"
    assert registry.snapshot.auth_methods == {"b-agent": ["agent"]} and url in registry.snapshot.source


def test_refresh_from_a_checkout_and_refusing_a_bad_registry(tmp_path: Path) -> None:
    checkout = tmp_path / "registry"
    for agent_id in ("b-agent", "a-agent", "_not_yet"):
        (checkout / agent_id).mkdir(parents=True)
        (checkout / agent_id / "agent.json").write_text(json.dumps({**AGENT, "id": agent_id}))
    output = tmp_path / "snapshot.json"
    assert refresh("--from-dir", str(checkout), "--output", str(output)).returncode == 0
    assert [a.id for a in load_registry(output).agents] == ["a-agent", "b-agent"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": "1.0.0", "agents": [{"id": "x"}]}))
    before = output.read_text()
    result = refresh("--from", str(bad), "--output", str(output))
    assert result.returncode != 0 and "not an ACP agent registry" in result.stderr
    assert output.read_text() == before
