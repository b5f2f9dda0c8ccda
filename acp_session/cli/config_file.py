"""``$XDG_CONFIG_HOME/acp-session/config.toml``: a default agent, named agent profiles and defaults for flags;
``acp-session config show`` prints the merged result and where each value came from.

Precedence, highest first: the command line, the agent's profile (``[agents.NAME]``), ``[defaults]``, the
built-in defaults. A value counts as given on the command line when it differs from the parser's default. The
file is read with the stdlib ``tomllib`` (Python 3.11+; on 3.10 the ``cli`` extra installs ``tomli``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

from ..mcp.config import McpConfigError, server_from_entry
from .config_bounds import MAX_BYTES, shape_problem
from .exits import EXIT_OK, EXIT_USAGE
from .safe_text import json_safe
from .screen import Screen, say

__all__ = ["ConfigError", "apply_config_file", "config_path", "load_config", "main", "merged_settings"]

POLICIES = {"approve-all": "yes", "approve-reads": "approve_reads", "deny-all": "deny_all", "ask": None}

# key in the file -> (argparse dest, the types it takes, what it is)
FLAG_KEYS: dict[str, tuple[str, tuple[type, ...], str]] = {
    "model": ("model", (str,), "a model id"),
    "mode": ("mode", (str,), "a mode id"),
    "set": ("set_options", (dict,), "a table of config options"),
    "system_prompt": ("system_prompt", (str,), "text, or @FILE"),
    "policy": ("policy_name", (str,), "approve-all, approve-reads, deny-all or ask"),
    "allow": ("allow_rules", (list,), "a list of KIND[:GLOB] rules"),
    "deny": ("deny_rules", (list,), "a list of KIND[:GLOB] rules"),
    "timeout": ("timeout", (int, float), "seconds"),
    "format": ("format", (str,), "text, json or quiet"),
    "env": ("env", (str,), "inherit or minimal"),
    "pass_env": ("pass_env", (list,), "a list of variable names"),
    "init_timeout": ("init_timeout", (int, float), "seconds"),
    "allow_files": ("allow_files", (bool,), "true or false"),
    "allow_terminal": ("allow_terminal", (bool,), "true or false"),
    "registry": ("registry", (str,), "a file or URL"),
    "preview": ("preview", (bool,), "true or false"),
}
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]{1,40}")

PROFILE_KEYS = {"command": (str,), "id": (str,), "env": (dict,), "mcp_servers": (dict,)}


class ConfigError(ValueError):
    """The file cannot be read, or a value has the wrong type; the text names the file and the key."""


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "acp-session" / "config.toml"


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    try:
        import tomli  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise ConfigError(
            f"{config_path()}: reading the config file needs Python 3.11+, or tomli: pip install 'acp-session[cli]'"
        ) from None
    return tomli


def load_config(path: Path | None = None) -> dict[str, Any]:
    """The file's tables, checked; ``{}`` when there is no file."""
    path = path or config_path()
    if not path.is_file():
        return {}
    toml = _toml()
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_BYTES + 1)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it: {_one_line(str(exc))}") from None
    if len(raw) > MAX_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_BYTES} bytes; not a config file")
    problem = shape_problem(text)
    if problem is not None:
        raise ConfigError(f"{path}: not a config file: {problem}")
    try:
        data: dict[str, Any] = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {_one_line(str(exc))}") from None
    except (RecursionError, MemoryError):
        raise ConfigError(f"{path}: not a config file: too deeply nested or too large to read") from None
    _check_finite(path, "", data)
    for key in data:
        if key not in ("default_agent", "defaults", "agents"):
            raise ConfigError(f"{path}: unknown key {_short(key)} (known: default_agent, [defaults], [agents.NAME])")
    if not isinstance(data.get("default_agent", ""), str):
        raise ConfigError(f"{path}: default_agent must be a string (a profile name, registry id or command)")
    _check_flags(path, "[defaults]", data.get("defaults", {}))
    agents = data.get("agents", {})
    if not isinstance(agents, dict):
        raise ConfigError(f"{path}: [agents] must be a table of profiles ([agents.NAME])")
    for name, profile in agents.items():
        where = f"[agents.{_name(name)}]"
        if not isinstance(profile, dict):
            raise ConfigError(f"{path}: {where} must be a table")
        own = {key: value for key, value in profile.items() if key in PROFILE_KEYS}
        for key, value in own.items():
            if not isinstance(value, PROFILE_KEYS[key]):
                raise ConfigError(f"{path}: {where} {key}: expected a {PROFILE_KEYS[key][0].__name__}")
        if ("command" in own) == ("id" in own):
            raise ConfigError(f"{path}: {where} needs exactly one of command (a command line) or id (a registry id)")
        for server, entry in own.get("mcp_servers", {}).items():
            try:
                server_from_entry(server, entry)
            except McpConfigError as exc:
                raise ConfigError(f"{path}: {where} mcp_servers: {exc}") from None
        _check_flags(path, where, {key: value for key, value in profile.items() if key not in PROFILE_KEYS})
    return data


def _short(value: Any, width: int = 60) -> str:
    """``repr(value)`` cut to ``width`` characters: a message about a value stays one short line."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _name(key: Any) -> str:
    """A key as a message shows it: a bare key as it is, any other quoted and cut short."""
    text = str(key)
    return text if _BARE_KEY.fullmatch(text) else _short(text, 40)


def _one_line(text: str, width: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _check_finite(path: Path, where: str, value: Any) -> None:
    """``nan`` and ``inf`` are TOML numbers but no setting's value: refused wherever they stand."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{path}: {where or 'a value'}: {value} is not a finite number")
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        _check_finite(path, f"{where}.{_name(key)}" if where else _name(key), item)


def _check_flags(path: Path, where: str, table: Any) -> None:
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {where} must be a table")
    for key, value in table.items():
        if key not in FLAG_KEYS:
            raise ConfigError(f"{path}: {where} unknown key {_short(key)} (known: {', '.join(FLAG_KEYS)})")
        _, types, what = FLAG_KEYS[key]
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            raise ConfigError(f"{path}: {where} {key}: expected {what}, not {_short(value)}")
        if key == "policy" and value not in POLICIES:
            raise ConfigError(f"{path}: {where} policy: expected {what}, not {_short(value)}")
        if key == "timeout" and isinstance(value, (int, float)) and not value > 0:
            raise ConfigError(f"{path}: {where} timeout: expected a positive number of seconds, not {value!r}")
        if key == "init_timeout" and isinstance(value, (int, float)) and not value >= 0:
            raise ConfigError(f"{path}: {where} init_timeout: expected 0 (no limit) or more seconds, not {value!r}")
        if isinstance(value, list) and not all(isinstance(item, str) for item in value):
            raise ConfigError(f"{path}: {where} {key}: expected {what}")


def profile_of(config: dict[str, Any], agent: str | None) -> tuple[str | None, dict[str, Any], str]:
    """(the profile's name or None, its table, where the agent came from) for ``--agent`` or the default."""
    source = "command line"
    if agent is None:
        agent = config.get("default_agent")
        source = f"{config_path()} default_agent"
    if agent is None:
        return None, {}, "built-in default"
    profiles: dict[str, Any] = config.get("agents", {})
    if agent in profiles:
        return agent, profiles[agent], source
    return None, {"command": agent}, source  # a registry id or a command line, as --agent takes it


def merged_settings(config: dict[str, Any], agent: str | None) -> dict[str, tuple[Any, str]]:
    """Each setting the file gives (for ``agent``, or the default agent): key -> (value, where it came from)."""
    name, profile, agent_source = profile_of(config, agent)
    found: dict[str, tuple[Any, str]] = {}
    if name is not None or agent_source != "built-in default":
        value = profile.get("command", profile.get("id"))
        found["agent"] = (value, agent_source if name is None else f"{config_path()} [agents.{name}]")
    if name is not None:
        found["profile"] = (name, agent_source)
    for key, value in config.get("defaults", {}).items():
        found[key] = (value, f"{config_path()} [defaults]")
    for key, value in profile.items():
        if key in ("command", "id"):
            continue
        key = {"env": "agent_env"}.get(key, key)  # a profile's env is the agent's variables, not --env
        found[key] = (value, f"{config_path()} [agents.{name}]")
    return found


def apply_config_file(args: argparse.Namespace, parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """Fill in what the command line left at its default from the file; a broken file is a usage error."""
    try:
        settings = merged_settings(load_config(), args.agent)
    except ConfigError as exc:
        parser.error(str(exc))
    sources: dict[str, str] = {}
    for key, (value, source) in settings.items():
        if _apply(args, parser, key, value, source):
            sources[key] = source
    args.config_sources = sources


def _table(source: str) -> str:
    """``[defaults]`` or ``[agents.NAME]``: the table of the file a value came from."""
    return source.rpartition(" ")[2]


def _apply(args: argparse.Namespace, parser: argparse.ArgumentParser, key: str, value: Any, source: str = "") -> bool:
    """Set one file value on ``args`` unless the command line gave it; whether it was used. The session options
    (``model``, ``mode``, ``set``) go to ``args.file_settings``: (key, value, where, optional), set once the
    session is open; those of ``[defaults]`` are optional, skipped for an agent that does not offer them."""
    if key == "agent":  # the profile's command or registry id, or default_agent
        args.agent = value
        return True
    if key == "profile":
        args.profile = value
        return True
    if key == "agent_env":  # a profile's environment for the agent
        args.profile_env = {str(k): str(v) for k, v in value.items()}
        return True
    if key == "mcp_servers":
        given = {str(getattr(server, "name", "")) for server in getattr(args, "mcp_servers", [])}
        extra = [server_from_entry(name, entry) for name, entry in value.items() if name not in given]
        args.mcp_servers = [*extra, *getattr(args, "mcp_servers", [])]
        return True
    dest = FLAG_KEYS[key][0]
    if key == "policy":
        flags = ("yes", "approve_reads", "deny_all")
        if not hasattr(args, "yes") or any(getattr(args, flag, False) for flag in flags):
            return False
        target = POLICIES[value]
        if target is not None:
            setattr(args, target, True)
        return True
    if key in ("allow", "deny"):
        if not hasattr(args, "set_options"):
            return False
        args.policy_rules = [*getattr(args, "policy_rules", []), *((key, rule) for rule in value)]
        return True
    if key in ("model", "mode", "set"):
        if not hasattr(args, "set_options"):
            return False
        table = _table(source)
        if key == "set":
            given = {text.partition("=")[0].strip() for text in args.set_options}
            wanted = [(k, _text(v), f"config.toml {table} set") for k, v in value.items() if k not in given]
        elif getattr(args, key) is None:
            wanted = [(key, value, f"config.toml {table} {key}")]
        else:
            return False  # the command line gave it
        optional = table == "[defaults]"
        args.file_settings = [*getattr(args, "file_settings", []), *((*w, optional) for w in wanted)]
        return bool(wanted)
    if not hasattr(args, dest) or getattr(args, dest) != parser.get_default(dest):
        return False  # not a flag of this command, or the command line gave it
    if key == "format" and getattr(args, "json", False):
        return False  # --json on the command line is a format too
    if key == "format" and value == "json":
        args.json = True
    setattr(args, dest, value)
    return True


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


# ---------------------------------------------------------------------------------------------- config show


def _fail(message: str) -> NoReturn:
    say(f"acp-session config: error: {message}")
    sys.exit(EXIT_USAGE)


def main(argv: list[str]) -> int:
    """``acp-session config [show] [--agent NAME] [--json]``, ``acp-session config path``."""
    parser = argparse.ArgumentParser(
        prog="acp-session config",
        description=f"The config file ({config_path()}): `show` prints the settings it gives a command, merged "
        "(a profile over [defaults]), and where each came from; flags on a command line win over both.",
    )
    parser.add_argument(
        "action",
        nargs="?",
        default="show",
        choices=("show", "path"),
        help="show (the default): the merged settings; path: the file's path",
    )
    parser.add_argument("--agent", metavar="NAME", default=None, help="a profile (default: default_agent)")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    args = parser.parse_args(argv)
    screen = Screen(sys.stdout)
    if args.action == "path":
        screen.line(str(config_path()))
        return EXIT_OK
    try:
        settings = merged_settings(load_config(), args.agent)
    except ConfigError as exc:
        _fail(str(exc))
    if args.json:
        record = {
            "event": "config",
            "path": str(config_path()),
            "exists": config_path().is_file(),
            "settings": {key: {"value": value, "source": source} for key, (value, source) in settings.items()},
        }
        screen.line(json_safe(json.dumps(record, ensure_ascii=False)))
        return EXIT_OK
    screen.line(f"# {config_path()}{'' if config_path().is_file() else ' (no such file)'}")
    if not settings:
        screen.line("# nothing set: every command uses its built-in defaults")
    for key, (value, source) in settings.items():
        screen.line(f"{key} = {json.dumps(value, ensure_ascii=False)}  # {source}")
    return EXIT_OK
