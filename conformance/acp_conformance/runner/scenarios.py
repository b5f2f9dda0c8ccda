"""Scenario files: the prompts that make a given agent do what some checks need (``--scenarios FILE``).

A client cannot make an agent ask for permission, run long or start a terminal: the model decides. The
person running the checks says how, in a small TOML file mapping each scenario to a prompt::

    timeout = 30                 # default time limit per scenario, in seconds (optional)

    [long_turn]
    prompt = "Count slowly from 1 to 200, one number per line."
    timeout = 60

    permission = "Delete the file {cwd}/README.md"   # short form: just the prompt

``{cwd}`` in a prompt becomes the session's working directory: a fresh, empty temporary directory holding only
``README.md``, made for each check. Unknown scenario names are an error, so a typo does not silently turn a
check into "not applicable".
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_toml: Any
try:  # tomllib from Python 3.11, else the tomli package it came from
    _toml = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")
except ImportError:  # pragma: no cover - Python 3.10 without tomli
    _toml = None

__all__ = [
    "DEFAULT_TIMEOUT",
    "REFERENCE_SCENARIOS",
    "SCENARIO_HELP",
    "Scenario",
    "ScenarioError",
    "Scenarios",
    "load_scenarios",
]

DEFAULT_TIMEOUT = 30.0

# What each scenario's prompt must make the agent do; the checks that use it say so in their results.
SCENARIO_HELP: dict[str, str] = {
    "long_turn": "a turn that streams output for a few seconds at least (long enough to cancel it, or to send "
    "another prompt while it runs)",
    "permission": "a turn that asks for permission (session/request_permission) with an allow and a reject option",
    "tool_call": "a turn that reports at least one tool call (v1 agents: typically reading or writing a file, "
    "which the runner answers inside the sandbox)",
    "background": "a turn that starts background work (a terminal or tool call listed in state_update.background) "
    "which ends by itself within the time limit (protocol v2 only)",
    "terminal": "a turn that runs a command: an agent-owned terminal (v2 terminal_update) or the client's "
    "terminal/* methods (v1), which the runner answers in the sandbox",
    "plan": "a turn that reports a plan",
    "elicitation": "a turn that asks the user a question through elicitation/create when the client offers form "
    "elicitation (protocol v1)",
    "refusal": "a turn that ends with the refusal stop reason (optional)",
    "max_tokens": "a turn that ends with the max_tokens stop reason (optional)",
    "error": "a turn whose work fails: protocol v2 ends it with the error stop reason (optional)",
    "edit_permission": "a turn that asks for permission (with a reject option) before it writes a file in the "
    "session's directory, and writes it only when allowed (optional: without it the permission scenario is used)",
}

# The reference agent's own file, used when the agent identifies as the reference agent and no file is given.
REFERENCE_SCENARIOS = Path(__file__).resolve().parent.parent / "agent" / "scenarios.toml"


class ScenarioError(ValueError):
    """The scenario file cannot be read or does not have the expected shape."""


@dataclass(frozen=True)
class Scenario:
    name: str
    prompt: str
    timeout: float

    def text(self, cwd: str) -> str:
        """The prompt for a session whose working directory is ``cwd``."""
        return self.prompt.replace("{cwd}", cwd)

    def describe(self) -> str:
        return f"{self.name}: {self.prompt!r}"


@dataclass(frozen=True)
class Scenarios:
    source: str | None  # the file, or None when there is none
    entries: dict[str, Scenario]

    def get(self, name: str) -> Scenario | None:
        return self.entries.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.entries


NO_SCENARIOS = Scenarios(None, {})


def _timeout(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ScenarioError(f"{where}: timeout must be a positive number of seconds, got {value!r}")
    return float(value)


def load_scenarios(path: str | os.PathLike[str]) -> Scenarios:
    """Read a scenario file; raises ``ScenarioError`` with a one-line reason."""
    if _toml is None:
        raise ScenarioError("reading scenario files needs Python 3.11 or the tomli package")
    try:
        with open(path, "rb") as handle:
            data = _toml.load(handle)
    except OSError as exc:
        raise ScenarioError(f"cannot read {path}: {exc.strerror or exc}") from None
    except _toml.TOMLDecodeError as exc:
        raise ScenarioError(f"{path} is not valid TOML: {exc}") from None
    default = _timeout(data.pop("timeout"), f"{path}") if "timeout" in data else DEFAULT_TIMEOUT
    entries: dict[str, Scenario] = {}
    for name, value in data.items():
        if name not in SCENARIO_HELP:
            known = ", ".join(SCENARIO_HELP)
            raise ScenarioError(f"{path}: unknown scenario {name!r} (known: {known})")
        prompt: Any
        if isinstance(value, str):
            prompt, timeout = value, default
        elif isinstance(value, dict):
            unknown = sorted(set(value) - {"prompt", "timeout"})
            if unknown:
                raise ScenarioError(f"{path}: [{name}] has unknown keys {unknown} (use prompt and timeout)")
            prompt = value.get("prompt")
            timeout = _timeout(value["timeout"], f"{path}: [{name}]") if "timeout" in value else default
        else:
            raise ScenarioError(f"{path}: {name} must be a prompt string or a table with prompt = ...")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ScenarioError(f"{path}: [{name}] needs a non-empty prompt")
        entries[name] = Scenario(name, prompt, timeout)
    return Scenarios(str(path), entries)
