"""The recorded runs of the third-party ACP v1 agents: one function per run, shared by the tests and the recorder.

Each scenario drives a fresh agent process through :class:`RawV1Client` and leaves its whole wire in a :class:`Run`.
``python -m tests.interop.record_v1_agents`` writes every run to ``recordings/<name>.jsonl``;
test_v1_agents_raw.py runs them again, checks the facts V1_AGENTS.md states, and that each recording still matches.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .raw_v1_client import DEFER, AgentError, Msg, RawError, RawV1Client, canned_handlers, permission_outcome

HERE = Path(__file__).resolve().parent
RECORDINGS = HERE / "recordings"
TS_V1_AGENT = HERE / "node_modules" / "acp-sdk-v1" / "dist" / "examples" / "agent.js"
PY_V1_AGENT = HERE / "py_v1_agent.py"

CWD = "/tmp/acp-v1-interop"
V2_SHAPED_OFFER: Msg = {"protocolVersion": 2, "info": {"name": "x", "version": "1"}, "capabilities": {}}
REFUSED = "path outside the workspace"


@dataclass
class Run:
    """One agent process's whole conversation, and what its scenario found."""

    name: str
    client: RawV1Client
    store: Path
    answers: dict[str, Any] = field(default_factory=dict)
    session_id: str = ""
    error: BaseException | None = None  # what the scenario's drive raised, if anything

    @property
    def wire(self) -> list[Msg]:
        return self.client.wire

    def updates(self) -> list[Msg]:
        return self.client.updates()

    def requests(self, method: str | None = None) -> list[Msg]:
        return self.client.agent_requests(method)


@dataclass(frozen=True)
class Scenario:
    name: str
    agent: str  # "ts" or "py"
    drive: Callable[[RawV1Client, Run], None]
    exact: bool = True  # the recording matches a new run exactly (after normalize); False: timing decides chunks
    handlers: Callable[[], dict[str, Any]] = canned_handlers


def _answer(client: RawV1Client, method: str, params: Any) -> Any:
    """The result, or the error object the agent answered with."""
    try:
        return client.request(method, params)
    except AgentError as exc:
        return {"error": exc.error}


def _start(client: RawV1Client, run: Run) -> str:
    run.answers["initialize"] = client.initialize()
    run.answers["session/new"] = client.new_session(CWD)
    run.session_id = run.answers["session/new"]["sessionId"]
    return run.session_id


def _prompt(text: str) -> Callable[[RawV1Client, Run], None]:
    def drive(client: RawV1Client, run: Run) -> None:
        session = _start(client, run)
        run.answers["session/prompt"] = client.prompt(session, text)

    return drive


def _permission_handlers(kind: str | None) -> Callable[[], dict[str, Any]]:
    def make() -> dict[str, Any]:
        handlers = canned_handlers()
        handlers["session/request_permission"] = lambda _c, msg: permission_outcome(msg, kind)
        return handlers

    return make


def _deferred_permission() -> dict[str, Any]:
    handlers = canned_handlers()
    handlers["session/request_permission"] = lambda _c, _m: DEFER
    return handlers


def _refusing_fs() -> dict[str, Any]:
    def refuse(_client: RawV1Client, _msg: Msg) -> Any:
        raise RawError(-32602, REFUSED)

    handlers = canned_handlers()
    handlers["fs/read_text_file"] = refuse
    handlers["fs/write_text_file"] = refuse
    return handlers


# -- the drives ----------------------------------------------------------------------------------------------------


def _initialize_and_probe(client: RawV1Client, run: Run) -> None:
    """initialize (v1 offer), session/new, then the optional methods: set_mode, authenticate, load, list."""
    session = _start(client, run)
    run.answers["session/set_mode"] = _answer(client, "session/set_mode", {"sessionId": session, "modeId": "code"})
    run.answers["session/set_mode bad"] = _answer(client, "session/set_mode", {"sessionId": session, "modeId": "x"})
    run.answers["authenticate"] = _answer(client, "authenticate", {"methodId": "none"})
    load = {"sessionId": session, "cwd": CWD, "mcpServers": []}
    run.answers["session/load"] = _answer(client, "session/load", load)
    run.answers["session/list"] = _answer(client, "session/list", {})


def _initialize_v2_offer(client: RawV1Client, run: Run) -> None:
    run.answers["initialize"] = _answer(client, "initialize", V2_SHAPED_OFFER)


def _cancel_after_first_update(text: str) -> Callable[[RawV1Client, Run], None]:
    def drive(client: RawV1Client, run: Run) -> None:
        session = _start(client, run)
        request_id = client.send_prompt(session, text)
        client.wait_for(lambda m: m.get("method") == "session/update")
        client.notify("session/cancel", {"sessionId": session})
        run.answers["session/prompt"] = client.wait_response(request_id)["result"]

    return drive


def _cancel_at_permission(then: Msg) -> Callable[[RawV1Client, Run], None]:
    """session/cancel while the permission request is open, then answer it with ``then``."""

    def drive(client: RawV1Client, run: Run) -> None:
        session = _start(client, run)
        request_id = client.send_prompt(session, "permission")
        asked = client.wait_request("session/request_permission")
        client.notify("session/cancel", {"sessionId": session})
        time.sleep(0.2)  # let the agent see the cancel before the answer
        client.respond(asked["id"], then)
        run.answers["session/prompt"] = client.wait_response(request_id)["result"]

    return drive


def _set_mode(client: RawV1Client, run: Run) -> None:
    session = _start(client, run)
    run.answers["session/set_mode"] = _answer(client, "session/set_mode", {"sessionId": session, "modeId": "code"})
    run.answers["session/set_mode bad"] = _answer(client, "session/set_mode", {"sessionId": session, "modeId": "x"})


def _load(client: RawV1Client, run: Run) -> None:
    """A first process (not recorded) holds a conversation with --store; this one loads it."""
    with RawV1Client(_py_argv(run.store)) as first:
        first.initialize()
        session = first.new_session(CWD)["sessionId"]
        first.prompt(session, "hello")
        first.prompt(session, "read /tmp/acp-v1-interop/notes.txt")
        first.request("session/set_mode", {"sessionId": session, "modeId": "code"})
    run.answers["initialize"] = client.initialize()
    load = {"sessionId": session, "cwd": CWD, "mcpServers": []}
    run.answers["session/load"] = client.request("session/load", load)
    run.session_id = session
    run.answers["session/prompt"] = client.prompt(session, "after the load")
    run.answers["session/load unknown"] = _answer(client, "session/load", {**load, "sessionId": "py-sess-99"})


SCENARIOS: list[Scenario] = [
    # the TypeScript SDK 0.17.0 example agent
    Scenario("ts-initialize", "ts", _initialize_and_probe),
    Scenario("ts-initialize-v2-offer", "ts", _initialize_v2_offer),
    Scenario("ts-prompt-allow", "ts", _prompt("hello"), handlers=_permission_handlers("allow_once")),
    Scenario("ts-prompt-reject", "ts", _prompt("hello"), handlers=_permission_handlers("reject_once")),
    Scenario("ts-prompt-permission-cancelled", "ts", _prompt("hello"), handlers=_permission_handlers(None)),
    Scenario("ts-cancel-during-turn", "ts", _cancel_after_first_update("hello")),
    Scenario(
        "ts-cancel-at-permission",
        "ts",
        _cancel_at_permission({"outcome": {"outcome": "cancelled"}}),
        handlers=_deferred_permission,
    ),
    Scenario(
        "ts-cancel-then-allow",
        "ts",
        _cancel_at_permission({"outcome": {"outcome": "selected", "optionId": "allow"}}),
        handlers=_deferred_permission,
    ),
    # the agent on the official Python SDK (py_v1_agent.py)
    Scenario("py-initialize", "py", _initialize_and_probe),
    Scenario("py-initialize-v2-offer", "py", _initialize_v2_offer),
    Scenario("py-set-mode", "py", _set_mode),
    Scenario("py-echo", "py", _prompt("hello there")),
    Scenario("py-read", "py", _prompt("read /tmp/acp-v1-interop/notes.txt")),
    Scenario("py-read-refused", "py", _prompt("read /etc/passwd"), handlers=_refusing_fs),
    Scenario("py-write", "py", _prompt("write /tmp/acp-v1-interop/out.txt new text")),
    Scenario("py-run", "py", _prompt("run echo hello")),
    Scenario("py-permission-allow", "py", _prompt("permission"), handlers=_permission_handlers("allow_once")),
    Scenario("py-permission-reject", "py", _prompt("permission"), handlers=_permission_handlers("reject_once")),
    Scenario("py-permission-cancelled", "py", _prompt("permission"), handlers=_permission_handlers(None)),
    Scenario(
        "py-cancel-at-permission",
        "py",
        _cancel_at_permission({"outcome": {"outcome": "cancelled"}}),
        handlers=_deferred_permission,
    ),
    Scenario("py-plan", "py", _prompt("plan")),
    Scenario("py-think", "py", _prompt("think")),
    Scenario("py-slow", "py", _prompt("slow 3")),
    Scenario("py-slow-cancel", "py", _cancel_after_first_update("slow 50"), exact=False),
    Scenario("py-load", "py", _load),
]


def _py_argv(store: Path) -> list[str]:
    return [sys.executable, str(PY_V1_AGENT), "--store", str(store)]


def run_scenario(scenario: Scenario, node: str = "node") -> Run:
    with tempfile.TemporaryDirectory(prefix="acp-v1-") as store:
        argv = [node, str(TS_V1_AGENT)] if scenario.agent == "ts" else _py_argv(Path(store))
        client = RawV1Client(argv, handlers=scenario.handlers())
        run = Run(scenario.name, client, Path(store))
        try:
            scenario.drive(client, run)
        except Exception as exc:
            run.error = exc
        finally:
            client.close()
    return run


def run_all(scenarios: list[Scenario], node: str = "node", workers: int = 8) -> dict[str, Run]:
    """Run the scenarios side by side (the TypeScript agent sleeps a second between steps, so this saves time)."""
    with ThreadPoolExecutor(workers) as pool:
        runs = pool.map(lambda s: run_scenario(s, node), scenarios)
        return {run.name: run for run in runs}


def normalize(wire: list[Msg], exact: bool = True) -> list[Msg]:
    """The wire with the TS agent's random session ids replaced by ``<session-N>`` (N by first appearance).

    With ``exact=False`` agent_message_chunk updates are left out (their number depends on when a cancel lands).
    """
    names: dict[str, str] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if key == "sessionId" and isinstance(item, str) and len(item) == 32:
                    item = names.setdefault(item, f"<session-{len(names) + 1}>")
                out[key] = walk(item)
            return out
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    rows = [walk(row) for row in wire]
    if not exact:
        rows = [
            row
            for row in rows
            if not (
                row["msg"].get("method") == "session/update"
                and row["msg"]["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            )
        ]
    return rows
