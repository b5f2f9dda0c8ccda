"""The pure pieces of the whole-turn driver (dev/real_agents/wire.py, wiring.py, turns.py): fast, no agent."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from dev.real_agents.check import Cell
from dev.real_agents.table import load_agents, tomllib
from dev.real_agents.turns import (
    SECTION,
    V2_CHECKS,
    Permissions,
    TurnReport,
    advertised,
    render_section,
    replace_section,
)
from dev.real_agents.wire import updates_of, wire_diff
from dev.real_agents.wiring import ASKING_MODE, FAKE_KEY, WIRINGS, wire


def test_wire_diff_reports_drops_and_changes_not_additions() -> None:
    raw = {"sessionId": "s", "update": {"sessionUpdate": "state_update", "state": "idle", "usage": {"inputTokens": 3}}}
    same = {**raw, "extra": None}  # a default the decoder added is no drop
    assert wire_diff(raw, same) == []
    dropped = {"sessionId": "s", "update": {"sessionUpdate": "state_update", "state": "idle"}}
    assert wire_diff(raw, dropped) == ['update.usage: missing (raw {"inputTokens": 3})']
    changed = {"sessionId": "s", "update": {**raw["update"], "state": "running"}}
    assert wire_diff(raw, changed) == ['update.state: raw "idle", decoded "running"']
    assert wire_diff({"a": [1, 2]}, {"a": [1]}) == ["a: raw 2 items, decoded 1"]
    assert wire_diff({"a": [{"b": 1}]}, {"a": [{"b": True}]}) == ["a[0].b: raw 1, decoded true"]  # bool is no int
    assert wire_diff({"n": 1}, {"n": 1.0}) == []  # the same JSON number
    assert wire_diff({"a": {"b": 1}}, {"a": "x"}) == ['a: raw object, decoded "x"']


def test_updates_of_reads_incoming_session_updates_in_order(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    rows = [
        {"t": 1.0, "dir": "out", "msg": {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {}}},
        {"t": 1.1, "dir": "in", "msg": {"jsonrpc": "2.0", "method": "session/update", "params": {"n": 1}}},
        {"t": 1.2, "dir": "in", "raw": "not json"},
        {"t": 1.3, "dir": "in", "msg": {"jsonrpc": "2.0", "id": 1, "result": {}}},
        {"t": 1.4, "dir": "in", "msg": {"jsonrpc": "2.0", "method": "session/update", "params": {"n": 2}}},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert updates_of(path) == [{"n": 1}, {"n": 2}]


def test_wirings_point_the_agents_at_the_url_with_a_fake_key(tmp_path: Path) -> None:
    assert set(ASKING_MODE) == set(WIRINGS)
    env = wire("anthropic", tmp_path, "http://127.0.0.1:5")
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:5" and env["ANTHROPIC_API_KEY"] == FAKE_KEY
    env = wire("gemini", tmp_path, "http://127.0.0.1:5")
    assert env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:5" and env["GEMINI_API_KEY"] == FAKE_KEY
    env = wire("openai-compatible", tmp_path, "http://127.0.0.1:5")
    opencode = json.loads((tmp_path / ".config" / "opencode" / "opencode.json").read_text())
    provider_id, model = opencode["model"].split("/", 1)
    options = opencode["provider"][provider_id]["options"]
    assert (
        options == {"baseURL": "http://127.0.0.1:5/v1", "apiKey": FAKE_KEY}
        and model in opencode["provider"][provider_id]["models"]
    )
    assert opencode["permission"] == {"edit": "ask", "bash": "ask"}
    env = wire("openai-chat", tmp_path, "http://127.0.0.1:5")
    assert env["COPILOT_PROVIDER_BASE_URL"] == "http://127.0.0.1:5/v1" and env["COPILOT_PROVIDER_API_KEY"] == FAKE_KEY
    env = wire("openai-responses", tmp_path, "http://127.0.0.1:5")
    assert tomllib is not None
    config = tomllib.loads((tmp_path / ".codex" / "config.toml").read_text())
    provider = config["model_providers"][config["model_provider"]]
    assert provider["base_url"] == "http://127.0.0.1:5/v1" and provider["wire_api"] == "responses"
    assert env[provider["env_key"]] == FAKE_KEY and env["CODEX_HOME"] == str(tmp_path / ".codex")
    with pytest.raises(ValueError, match="unknown model wiring"):
        wire("no-such-api", tmp_path, "http://127.0.0.1:5")
    wired = {spec.name: spec.model for spec in load_agents().values() if spec.model}
    assert wired == {
        "claude": "anthropic",
        "claude-v2": "anthropic",
        "codex": "openai-responses",
        "codex-v2": "openai-responses",
        "copilot": "openai-chat",
        "opencode": "openai-compatible",
        "gemini": "gemini",
    }
    assert all(model in WIRINGS for model in wired.values())


def _request(*kinds: str) -> SimpleNamespace:
    options = [SimpleNamespace(kind=kind, option_id=f"id-{kind}") for kind in kinds]
    return SimpleNamespace(title="Write", options=options)


def test_permissions_pick_the_option_of_the_answer() -> None:
    permissions = Permissions()
    assert permissions(_request("reject_once", "allow_always", "allow_once")) == "id-allow_once"
    permissions.answer = "reject"
    assert permissions(_request("allow_once", "reject_always")) == "id-reject_always"
    assert permissions(_request("allow_once")) is None  # no reject option: cancelled
    assert permissions.take() == [
        "allow_once 'id-allow_once'",
        "reject_always 'id-reject_always'",
        "cancelled (no such option)",
    ]
    assert permissions.take() == []


def test_the_section_renders_and_replaces_only_itself() -> None:
    v1 = TurnReport("a", "pkg-a", "1.0.0", "anthropic", protocol=1, cells={"text": Cell("pass", "ok | fine")})
    v2 = TurnReport("b", "pkg-b", "2.0.0", "openai-responses", protocol=2, notes=["a note"])
    section = render_section([v1, v2], command="make real-agents", when="today", environment="here", isolated="no")
    assert section.startswith(SECTION)
    rows = [line for line in section.splitlines() if line.startswith("| a |") or line.startswith("| b |")]
    assert len(rows) == 3  # both in the table of every agent, only b in the v2 table
    assert "pass: ok \\| fine" in rows[0] and rows[-1].count("|") == len(V2_CHECKS) + 4
    assert "n/a: not reached" in rows[1]
    assert v2.checks[-len(V2_CHECKS) :] == V2_CHECKS and "usage" not in v1.checks

    document = "# Real agents\n\ntable\n"
    once = replace_section(document, section)
    assert once.startswith(document.rstrip()) and once.endswith(section)
    assert replace_section(once, section.replace("today", "tomorrow")).count(SECTION) == 1
    with_more = once + "\n## Later\n\nkept\n"
    assert replace_section(with_more, SECTION + "\n\nnew\n").endswith("new\n\n## Later\n\nkept\n")


def test_advertised_reads_the_raw_initialize_answer(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    session = {"fork": {}, "systemPrompt": {"mode": {"override": {}}}, "title": None}
    answer = {"protocolVersion": 2, "capabilities": {"session": session}}
    rows = [
        {"t": 1.0, "dir": "out", "msg": {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}},
        {"t": 1.1, "dir": "in", "msg": {"jsonrpc": "2.0", "id": 1, "result": answer}},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert advertised(path) == {"session/fork": True, "session/set_title": False, "systemPrompt": True}
    v1 = {"protocolVersion": 1, "agentCapabilities": {"sessionCapabilities": {"fork": {}}}}
    path.write_text(json.dumps({"t": 1.0, "dir": "in", "msg": {"jsonrpc": "2.0", "id": 1, "result": v1}}) + "\n")
    assert advertised(path) == {"session/fork": True, "session/set_title": False, "systemPrompt": False}
    path.write_text("")
    assert advertised(path) == {"session/fork": False, "session/set_title": False, "systemPrompt": False}
