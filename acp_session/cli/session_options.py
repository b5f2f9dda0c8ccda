"""The session's config options from the command line and the chat: ``--model`` / ``--mode`` / ``--set`` and
``/model`` / ``/mode`` / ``/set``, checked against what the agent advertised (the error lists what it offers).

``model`` and ``mode`` are the config options of those categories; a v1 agent's modes and models arrive as such
options already (the library maps them, and setting one sends ``session/set_mode`` / ``session/set_model``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from acp_session.schema import SessionConfigBoolean, SessionConfigSelect, SessionConfigSelectGroup

__all__ = [
    "OWN_COMMANDS",
    "OptionProblem",
    "argument_completions",
    "describe_options",
    "parse_command",
    "resolve_setting",
]

OWN_COMMANDS = (
    ("model", "show or switch the session's model (/model ID)"),
    ("mode", "show or switch the session's mode (/mode ID)"),
    ("set", "show or set a config option (/set KEY VALUE)"),
)
"""The chat's own slash commands for session options; they never reach the agent."""

_TRUE = ("true", "on", "yes", "1")
_FALSE = ("false", "off", "no", "0")


class OptionProblem(ValueError):
    """A setting the agent does not offer, or a value it does not take; the text lists what it offers."""


@dataclass(frozen=True)
class Setting:
    """One resolved setting: the option's id and the value to send (a value id, or a boolean)."""

    config_id: str
    value: str | bool
    label: str


def _known(options: Sequence[Any]) -> list[SessionConfigSelect | SessionConfigBoolean]:
    return [option for option in options if isinstance(option, (SessionConfigSelect, SessionConfigBoolean))]


def select_values(option: SessionConfigSelect) -> list[tuple[str, str]]:
    """``(value id, name)`` of a select, its groups flattened."""
    found: list[tuple[str, str]] = []
    for item in option.options:
        members = item.options if isinstance(item, SessionConfigSelectGroup) else [item]
        found += [(member.value, member.name) for member in members]
    return found


def _find(options: Sequence[Any], key: str) -> SessionConfigSelect | SessionConfigBoolean | None:
    known = _known(options)
    if key in ("model", "mode"):
        by_category = next((option for option in known if option.category == key), None)
        if by_category is not None:
            return by_category
    return next((option for option in known if option.config_id == key), None)


def resolve_setting(options: Sequence[Any], key: str, value: str, flag: str = "--set") -> Setting:
    """What to send for ``key`` = ``value``; ``OptionProblem`` when the agent offers no such option or value."""
    option = _find(options, key)
    alone = flag in ("--model", "--mode", "/model", "/mode") or flag.endswith((" model", " mode"))  # config.toml
    what = f"{flag} {value}" if alone else f"{flag} {key}={value}"
    if option is None:
        offered = ", ".join(option.config_id for option in _known(options)) or "none"
        hint = f"the agent offers no {key} choice" if key in ("model", "mode") else f"no config option {key!r}"
        raise OptionProblem(f"{what}: {hint} (its config options: {offered})")
    if isinstance(option, SessionConfigBoolean):
        lowered = value.lower()
        if lowered not in (*_TRUE, *_FALSE):
            raise OptionProblem(f"{what}: {option.config_id} is a boolean option: use true or false")
        return Setting(option.config_id, lowered in _TRUE, option.name)
    values = select_values(option)
    ids = [item for item, _ in values]
    if value not in ids:
        by_name = [item for item, name in values if name.lower() == value.lower()]
        if len(by_name) != 1:
            raise OptionProblem(f"{what}: {option.config_id} has no value {value!r}; choose one of: {', '.join(ids)}")
        value = by_name[0]
    return Setting(option.config_id, value, option.name)


def describe_options(options: Sequence[Any], key: str | None = None) -> list[str]:
    """Lines listing the options (or the one ``key`` names) with their values, the current one marked ``*``."""
    chosen = _known(options) if key is None else [o for o in [_find(options, key)] if o is not None]
    lines: list[str] = []
    for option in chosen:
        if isinstance(option, SessionConfigBoolean):
            lines.append(f"{option.config_id} ({option.name}): {'true' if option.current_value else 'false'}")
            continue
        values = [("*" if item == option.current_value else "") + item for item, _ in select_values(option)]
        lines.append(f"{option.config_id} ({option.name}): {' '.join(values)}")
    return lines


def parse_command(text: str) -> tuple[str, str | None, str | None] | None:
    """``/model [ID]``, ``/mode [ID]``, ``/set [KEY [VALUE]]`` (or ``KEY=VALUE``) as (command, key, value); None
    for any other text (it goes to the agent)."""
    if not text.startswith("/"):
        return None
    word, _, rest = text[1:].partition(" ")
    rest = rest.strip()
    if word in ("model", "mode"):
        return word, word, rest or None
    if word != "set":
        return None
    if "=" in rest and " " not in rest.partition("=")[0]:
        key, _, value = rest.partition("=")
        return "set", key.strip() or None, value.strip() or None
    key, _, value = rest.partition(" ")
    return "set", key or None, value.strip() or None


def argument_completions(text: str, options: Sequence[Any]) -> Iterable[tuple[str, str, int]]:
    """For the prompt text so far: ``(completion, description, start)`` for a value of ``/model`` / ``/mode``,
    or a key and then a value of ``/set``; ``start`` is where the completed word begins (negative, from the
    cursor)."""
    word, space, rest = text.partition(" ")
    if not space or word not in ("/model", "/mode", "/set"):
        return []
    if word == "/set":
        key, space, partial = rest.partition(" ")
        if not space:
            return [(o.config_id, o.name, -len(key)) for o in _known(options) if o.config_id.startswith(key)]
        if " " in partial:
            return []
        return _values(_find(options, key), partial)
    if " " in rest:
        return []
    return _values(_find(options, word[1:]), rest)


def _values(option: Any, partial: str) -> list[tuple[str, str, int]]:
    if isinstance(option, SessionConfigBoolean):
        return [(value, "", -len(partial)) for value in ("true", "false") if value.startswith(partial)]
    if isinstance(option, SessionConfigSelect):
        return [(item, name, -len(partial)) for item, name in select_values(option) if item.startswith(partial)]
    return []
