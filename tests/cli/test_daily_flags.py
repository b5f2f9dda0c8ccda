"""The daily-use flags of ``chat`` and ``resume`` without a terminal (issue 38), against the reference agent (v2),
a scripted v1 agent (modes and models) and the TS SDK v2 agent (its config options): ``--model``, ``--mode``,
``--set``, ``--system-prompt``, ``--fork``, ``--session NAME``, ``sessions show`` / ``history``, ``--timeout``,
``--format``; every ``--json`` record is validated against docs/cli-records.schema.json."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from tests.cli.support import run_cli
from tests.cli.test_json_records import records_of
from tests.interop.conftest import TS_AGENT, node  # noqa: F401 (the node fixture)
from tests.protocol.support import v1_argv


def preview_agent(store: Path) -> str:
    """The reference agent with its Preview methods (session/fork, systemPrompt), its sessions kept in ``store``."""
    return shlex.join([sys.executable, "-m", "acp_conformance.agent", "--preview", "--store", str(store)])


MODES = {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]}
MODELS = {
    "currentModelId": "small",
    "availableModels": [{"modelId": "small", "name": "Small"}, {"modelId": "big", "name": "Big"}],
}


def events(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [record for record in records if record["event"] == kind]


def test_mode_and_set_reach_the_reference_agent(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "chat", "--json", "--mode", "ask", "--set", "thoughts=true", "what is this")
    assert done.returncode == 0, done.stderr
    records = records_of(done.stdout)
    assert [(r["config_id"], r["value"], r["flag"]) for r in events(records, "config_option")] == [
        ("mode", "ask", "--mode"),
        ("thoughts", True, "--set"),
    ]
    assert events(records, "thought")  # thoughts on
    assert events(records, "done")[0]["text"] == "You asked: what is this"  # ask mode


def test_text_output_names_each_setting(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "chat", "--set", "mode=Review", "is it ok")  # a value's name works too
    assert done.returncode == 0, done.stderr
    assert "Mode: review" in done.stderr and "Review of your message" in done.stdout


def test_a_value_the_agent_does_not_offer_is_refused_with_the_list(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "chat", "--mode", "fast", "hi")
    assert done.returncode == 2
    assert "--mode fast: mode has no value 'fast'; choose one of: ask, code, review" in done.stderr
    assert "You said" not in done.stdout  # no turn
    done = run_cli(tmp_path, "chat", "--model", "gpt", "hi")
    assert done.returncode == 2
    assert "--model gpt: the agent offers no model choice (its config options: mode, thoughts)" in done.stderr
    done = run_cli(tmp_path, "chat", "--set", "thoughts=maybe", "hi")
    assert done.returncode == 2 and "thoughts is a boolean option: use true or false" in done.stderr
    done = run_cli(tmp_path, "chat", "--json", "--set", "colour=red", "hi")
    assert done.returncode == 2 and "no config option 'colour' (its config options: mode, thoughts)" in done.stderr
    assert records_of(done.stdout)[-1]["error_type"] == "UnknownConfigOption"


def test_bad_forms_are_usage_errors_before_the_agent_starts(tmp_path: Path) -> None:
    for args, message in (
        (["--set", "mode"], "--set 'mode': expected KEY=VALUE"),
        (["--fork"], "--fork needs a session to fork"),
        (["--approve-all", "--deny-all"], "--approve-all and --deny-all do not go together"),
        (["--allow", "run:src/**"], "--allow 'run:src/**': unknown tool kind 'run'"),
        (["--json", "--format", "quiet"], "--json and --format quiet do not go together"),
        (["--timeout", "0"], "must be a positive number of seconds"),
        (["--system-prompt", "@missing.txt"], "--system-prompt @missing.txt: cannot read"),
    ):
        done = run_cli(tmp_path, "chat", *args, "hi")
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr, (args, done.stderr)


def test_a_v1_agents_mode_and_model_go_out_as_set_mode_and_set_model(tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    agent = shlex.join(v1_argv(log, new={"modes": MODES, "models": MODELS}))
    done = run_cli(tmp_path, "chat", "--agent", agent, "--json", "--model", "Big", "--mode", "code", "hello")
    assert done.returncode == 0, done.stderr
    records = records_of(done.stdout)
    # --model, then --mode, then each --set in the order given
    assert [(r["config_id"], r["value"]) for r in events(records, "config_option")] == [
        ("model", "big"),
        ("mode", "code"),
    ]
    calls = [json.loads(line) for line in log.read_text().splitlines() if '"session/set_' in line]
    assert [(c["method"], c["params"]) for c in calls] == [
        ("session/set_model", {"sessionId": "s1", "modelId": "big"}),
        ("session/set_mode", {"sessionId": "s1", "modeId": "code"}),
    ]
    done = run_cli(tmp_path, "chat", "--agent", agent, "--model", "huge", "hello")
    assert done.returncode == 2 and "--model huge: model has no value 'huge'; choose one of: small, big" in done.stderr


def test_the_ts_sdk_agents_config_options(tmp_path: Path, node: str) -> None:  # noqa: F811
    agent = shlex.join([node, str(TS_AGENT)])
    done = run_cli(tmp_path, "chat", "--agent", agent, "--json", "--set", "thoughts=on", "--mode", "review", "hi")
    assert done.returncode == 0, done.stderr
    records = records_of(done.stdout)
    assert [(r["config_id"], r["value"]) for r in events(records, "config_option")] == [
        ("mode", "review"),
        ("thoughts", True),
    ]
    assert events(records, "thought")
    done = run_cli(tmp_path, "chat", "--agent", agent, "--set", "mode=fast", "hi")
    assert done.returncode == 2 and "choose one of: ask, code, review" in done.stderr


def test_system_prompt_text_and_file_where_the_agent_takes_one(tmp_path: Path) -> None:
    agent = preview_agent(tmp_path / "store.json")
    done = run_cli(tmp_path, "chat", "--agent", agent, "--system-prompt", "Be brief.", "/system")
    assert done.returncode == 0, done.stderr
    assert "Be brief." in done.stdout
    (tmp_path / "prompt.md").write_text("Answer in French.\n", encoding="utf-8")
    done = run_cli(tmp_path, "chat", "--agent", agent, "--system-prompt", "@prompt.md", "/system")
    assert done.returncode == 0 and "Answer in French." in done.stdout, done.stderr
    done = run_cli(tmp_path, "chat", "--system-prompt", "Be brief.", "/system")  # no --preview: no systemPrompt
    assert done.returncode == 2 and "--system-prompt: the agent takes no system prompt" in done.stderr


def test_named_sessions_start_continue_show_and_history(tmp_path: Path) -> None:
    first = records_of(run_cli(tmp_path, "chat", "--json", "--session", "work", "first words").stdout)
    session_id = first[0]["session_id"]
    again = run_cli(tmp_path, "chat", "--json", "--session", "work", "second words")
    assert again.returncode == 0, again.stderr
    assert records_of(again.stdout)[0]["session_id"] == session_id  # continued, not a new one
    other = records_of(run_cli(tmp_path, "chat", "--json", "--session", "play", "hi").stdout)
    assert other[0]["session_id"] != session_id
    shown = run_cli(tmp_path, "sessions", "show", "work", "--json")
    assert shown.returncode == 0, shown.stderr
    info = records_of(shown.stdout + '{"event": "done"}\n')[0]
    assert (info["session_id"], info["names"], info["listed_by_agent"]) == (session_id, ["work"], True)
    assert info["first_prompt"] == "first words" and info["cwd"] == str(tmp_path)
    text = run_cli(tmp_path, "sessions", "show", session_id)
    assert f"session id: {session_id}" in text.stdout and "names: work" in text.stdout
    history = records_of(run_cli(tmp_path, "sessions", "history", "work", "--json").stdout)
    said = [(r["role"], r["text"]) for r in events(history, "history") if r["type"] == "message"]
    assert said == [
        ("user", "first words"),
        ("agent", "You said: first words"),
        ("user", "second words"),
        ("agent", "You said: second words"),
    ]
    rendered = run_cli(tmp_path, "sessions", "history", "work")
    assert "> first words" in rendered.stdout and "You said: second words" in rendered.stdout
    missing = run_cli(tmp_path, "sessions", "show", "nope")
    assert missing.returncode == 1 and "no session 'nope'" in missing.stderr
    resumed = run_cli(tmp_path, "resume", "work", "--json", "third")  # resume takes the name too
    assert records_of(resumed.stdout)[0]["session_id"] == session_id


def test_fork_continues_in_a_new_session_and_leaves_the_original(tmp_path: Path) -> None:
    agent = preview_agent(tmp_path / "store.json")
    records_of(run_cli(tmp_path, "chat", "--agent", agent, "--json", "--session", "base", "one").stdout)
    forked = run_cli(tmp_path, "chat", "--agent", agent, "--json", "--session", "base", "--fork", "two")
    assert forked.returncode == 0, forked.stderr
    records = records_of(forked.stdout)
    fork = events(records, "fork")[0]
    assert fork["session_id"] != fork["source_session_id"]
    assert records[0] == fork  # chat: the fork first, then the session the run works in (the fork)
    assert [r["session_id"] for r in events(records, "session")] == [fork["session_id"]]
    history = records_of(run_cli(tmp_path, "sessions", "history", "base", "--agent", agent, "--json").stdout)
    said = [r["text"] for r in events(history, "history") if r["type"] == "message" and r["role"] == "user"]
    assert said == ["one"]  # the original did not get the fork's turn
    early = run_cli(tmp_path, "chat", "--agent", agent, "--session", "new-one", "--fork", "hi")
    assert early.returncode == 2 and "--fork: there is no session named 'new-one' to fork yet" in early.stderr
    done = run_cli(tmp_path, "resume", fork["session_id"], "--agent", agent, "--fork", "--json", "three")
    assert done.returncode == 0, done.stderr
    assert events(records_of(done.stdout), "fork")[0]["source_session_id"] == fork["session_id"]


def test_timeout_cancels_a_long_turn_with_the_cancelled_exit_code(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "chat", "--timeout", "0.5", "/slow 100")
    assert done.returncode == 3, done.stderr
    assert "the turn ran over --timeout 0.5 s; cancelling it" in done.stderr
    assert "[stop: cancelled]" in done.stdout
    quick = run_cli(tmp_path, "chat", "--timeout", "30", "hello")
    assert quick.returncode == 0 and "cancelling" not in quick.stderr


def test_format_quiet_prints_only_the_reply_and_format_json_is_json(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "chat", "--format", "quiet", "/tool")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "I changed one line in example.txt.\n"
    assert "session" not in done.stderr  # no progress lines either
    records = records_of(run_cli(tmp_path, "chat", "--format", "json", "hello").stdout)
    assert records[0]["event"] == "session" and records[-1]["event"] == "done"
    failed = run_cli(tmp_path, "chat", "--format", "quiet", "/fail")
    assert failed.returncode == 1 and failed.stdout == "Something is about to go wrong.\n"  # what it said
    assert "acp-session: the turn ended with an error: " in failed.stderr


def test_the_new_modules_write_only_through_the_screen() -> None:
    """What compare, config show, sessions show and --format quiet print goes through cli/screen.py's cleaning."""
    import ast

    import acp_session.cli.compare as compare
    import acp_session.cli.config_file as config_file
    import acp_session.cli.daily as daily
    import acp_session.cli.render_quiet as render_quiet
    import acp_session.cli.session_info as session_info
    from tests.cli.test_safe_text import raw_writes

    for module in (compare, config_file, daily, render_quiet, session_info):
        assert raw_writes(ast.parse(Path(str(module.__file__)).read_text())) == [], module.__name__


def test_quiet_output_is_cleaned_of_terminal_escapes(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "chat", "--format", "quiet", "/echo", "a\x1b]0;title\x07b")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
