"""``$XDG_CONFIG_HOME/acp-session/config.toml`` (issue 38): a default agent, named profiles (command, env, MCP
servers, policy, model/mode, options), defaults for flags, the command line winning over both, and
``acp-session config show`` with where each value came from; a broken file is one clear usage error."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from tests.cli.support import run_cli
from tests.cli.test_json_records import VALIDATOR, records_of
from tests.protocol.support import v1_argv

MODES = {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]}
MODELS = {
    "currentModelId": "small",
    "availableModels": [{"modelId": "small", "name": "S"}, {"modelId": "big", "name": "B"}],
}


def write_config(text: str) -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "acp-session" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a TOML basic string


def test_the_default_profile_picks_the_agent_its_model_and_mode(tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    command = shlex.join(v1_argv(log, new={"modes": MODES, "models": MODELS}))
    write_config(
        f'default_agent = "v1"\n\n[agents.v1]\ncommand = {toml_string(command)}\nmodel = "big"\nmode = "code"\n'
    )
    done = run_cli(tmp_path, "chat", "--json", "hello")
    assert done.returncode == 0, done.stderr
    options = [(r["config_id"], r["value"]) for r in records_of(done.stdout) if r["event"] == "config_option"]
    assert options == [("model", "big"), ("mode", "code")]
    done = run_cli(tmp_path, "chat", "--json", "--model", "small", "hello")  # the command line wins
    options = [(r["config_id"], r["value"]) for r in records_of(done.stdout) if r["event"] == "config_option"]
    assert options == [("model", "small"), ("mode", "code")]


def test_defaults_apply_to_every_agent_and_flags_win(tmp_path: Path) -> None:
    write_config('[defaults]\npolicy = "deny-all"\nset = { thoughts = true }\n')
    done = run_cli(tmp_path, "chat", "/permission")
    assert "(--deny-all): Reject" in done.stdout and "Show thoughts: true" in done.stderr
    done = run_cli(tmp_path, "chat", "--approve-all", "/permission")
    assert "(--approve-all): Allow once" in done.stdout
    write_config('[defaults]\nformat = "quiet"\n')
    assert run_cli(tmp_path, "chat", "hello there").stdout == "You said: hello there\n"
    assert records_of(run_cli(tmp_path, "chat", "--json", "hi").stdout)[-1]["event"] == "done"


def test_defaults_an_agent_does_not_offer_are_skipped_and_flags_stay_strict(tmp_path: Path) -> None:
    """``[defaults]`` is for every agent: a value this one does not offer is skipped with one note; the same on
    the command line, or in the agent's own profile, is still an error (exit code 2)."""
    write_config('[defaults]\nset = { thoughts = true, verbosity = "high" }\nmodel = "gpt-5"\n')
    done = run_cli(tmp_path, "chat", "--json", "hi")  # the reference agent offers mode and thoughts
    assert done.returncode == 0, done.stderr
    records = records_of(done.stdout)
    options = [(r["config_id"], r["value"], r["flag"]) for r in records if r["event"] == "config_option"]
    assert options == [("thoughts", True, "config.toml [defaults] set")]
    assert records[-1]["event"] == "done" and records[-1]["stop_reason"] == "end_turn"
    [note] = [line for line in done.stderr.splitlines() if "skipped" in line]
    assert "[defaults] model gpt-5" in note and "no config option 'verbosity'" in note
    done = run_cli(tmp_path, "chat", "--set", "verbosity=high", "hi")
    assert done.returncode == 2 and "--set verbosity=high: no config option 'verbosity'" in done.stderr
    agent = shlex.join([sys.executable, "-m", "acp_conformance.agent"])
    write_config(f'[agents.ref]\ncommand = {toml_string(agent)}\nmodel = "gpt-5"\n')
    done = run_cli(tmp_path, "chat", "--agent", "ref", "hi")
    assert done.returncode == 2 and "config.toml [agents.ref] model gpt-5: the agent offers no model" in done.stderr


def test_a_profiles_env_and_mcp_servers_reach_the_agent(tmp_path: Path) -> None:
    agent = shlex.join([sys.executable, "-m", "acp_conformance.agent"])
    command = f"sh -c 'printf %s \"$PROFILE_VAR\" > seen.txt; exec {agent}'"
    server = {"command": sys.executable, "args": ["-c", "pass"]}
    write_config(
        f'[agents.mine]\ncommand = {toml_string(command)}\nenv = {{ PROFILE_VAR = "from the profile" }}\n'
        f'policy = "approve-all"\n\n[agents.mine.mcp_servers.noop]\ncommand = {toml_string(server["command"])}\n'
        'args = ["-c", "pass"]\n'
    )
    done = run_cli(tmp_path, "chat", "--agent", "mine", "--json", "/permission")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "seen.txt").read_text() == "from the profile"
    records = records_of(done.stdout)
    [servers] = [r for r in records if r["event"] == "mcp_servers"]
    assert [s["name"] for s in servers["sent"]] == ["noop"]
    assert [r["policy"] for r in records if r["event"] == "permission"] == ["--approve-all"]


def test_config_show_prints_the_merged_settings_and_their_sources(tmp_path: Path) -> None:
    path = write_config(
        'default_agent = "fast"\n[defaults]\ntimeout = 60\nmode = "ask"\n'
        '[agents.fast]\nid = "codex"\nmode = "code"\n[agents.slow]\ncommand = "slow-agent --acp"\n'
    )
    shown = run_cli(tmp_path, "config", "show")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"# {path}"
    assert f'agent = "codex"  # {path} [agents.fast]' in lines
    assert f'profile = "fast"  # {path} default_agent' in lines
    assert f"timeout = 60  # {path} [defaults]" in lines
    assert f'mode = "code"  # {path} [agents.fast]' in lines  # the profile over [defaults]
    record = json.loads(run_cli(tmp_path, "config", "show", "--agent", "slow", "--json").stdout)
    assert not list(VALIDATOR.iter_errors(record))
    assert record["settings"]["agent"] == {"value": "slow-agent --acp", "source": f"{path} [agents.slow]"}
    assert record["settings"]["mode"] == {"value": "ask", "source": f"{path} [defaults]"}
    assert run_cli(tmp_path, "config", "path").stdout.strip() == str(path)


def test_no_file_shows_the_built_in_defaults(tmp_path: Path) -> None:
    shown = run_cli(tmp_path, "config", "show")
    assert shown.returncode == 0 and "(no such file)" in shown.stdout and "built-in defaults" in shown.stdout


def test_a_broken_file_is_one_usage_error_naming_file_and_key(tmp_path: Path) -> None:
    for text, message in (
        ("[defaults\n", "not valid TOML"),
        ("[defaults]\ncolour = 1\n", "[defaults] unknown key 'colour'"),
        ('[defaults]\ntimeout = "soon"\n', "[defaults] timeout: expected seconds"),
        ('[defaults]\npolicy = "maybe"\n', "policy: expected approve-all, approve-reads, deny-all or ask"),
        ('[agents.x]\nmodel = "m"\n', "[agents.x] needs exactly one of command"),
        ('[agents.x]\ncommand = "a"\nmcp_servers = { s = { url = 1 } }\n', "[agents.x] mcp_servers: MCP server 's'"),
    ):
        path = write_config(text)
        done = run_cli(tmp_path, "chat", "hi")
        assert done.returncode == 2, (text, done.stderr)
        assert str(path) in done.stderr and message in done.stderr, (text, done.stderr)
        assert "Traceback" not in done.stderr
        shown = run_cli(tmp_path, "config", "show")
        assert shown.returncode == 2 and message in shown.stderr
