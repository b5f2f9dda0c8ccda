"""How to point each agent at the scripted model: environment variables and config files in its fresh HOME.

Found by reading the agents' published code and documentation:

- ``anthropic`` (claude-agent-acp, both builds; they run Claude Code): ``ANTHROPIC_BASE_URL`` and
  ``ANTHROPIC_API_KEY``; non-essential traffic (telemetry, update checks, error reports) switched off by its
  documented variables.
- ``openai-responses`` (codex-acp, both builds; they run codex): a model provider in ``$CODEX_HOME/config.toml``
  with ``base_url`` and ``wire_api = "responses"``, its key read from the variable ``env_key`` names; the same
  fake key is also given as ``OPENAI_API_KEY`` / ``CODEX_API_KEY`` for the agents' api-key login.
- ``openai-chat`` (copilot): its documented "bring your own key" variables (``copilot help environment``):
  ``COPILOT_PROVIDER_BASE_URL``, ``COPILOT_PROVIDER_TYPE=openai`` with the chat-completions wire API,
  ``COPILOT_PROVIDER_API_KEY``, ``COPILOT_MODEL``, and ``COPILOT_OFFLINE`` (no GitHub login, no other traffic).
- ``openai-compatible`` (opencode): a provider in ``~/.config/opencode/opencode.json`` on its bundled
  ``@ai-sdk/openai-compatible`` (chat completions) with ``baseURL`` and ``apiKey``; ``permission`` set to ask
  before edits and commands (it asks nothing by default); auto-update and the models fetch switched off.
- ``gemini`` (gemini-cli): ``GOOGLE_GEMINI_BASE_URL`` (which selects its "gateway" auth) and ``GEMINI_API_KEY``;
  the Gemini API itself (``streamGenerateContent``), served by the same scripted server.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from .model_server import MODEL

__all__ = ["ASKING_MODE", "FAKE_KEY", "HOW", "WIRINGS", "wire"]

FAKE_KEY = "sk-scripted-local-only"
# A model codex knows (its bundled catalog): codex offers its file-editing tool (apply_patch) by the model's
# catalog entry, and offers none to a model it does not know. The scripted server answers any model name.
CODEX_MODEL = "gpt-5.5"


def _anthropic(home: Path, url: str) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": FAKE_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_COST_WARNINGS": "1",
    }


def _codex(home: Path, url: str) -> dict[str, str]:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f'model = "{CODEX_MODEL}"\n'
        'model_provider = "scripted"\n'
        'approval_policy = "on-request"\n'
        'sandbox_mode = "read-only"\n'
        "\n"
        "[model_providers.scripted]\n"
        'name = "Scripted local model"\n'
        f'base_url = "{url}/v1"\n'
        'env_key = "SCRIPTED_API_KEY"\n'
        'wire_api = "responses"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n",
        encoding="utf-8",
    )
    return {
        "CODEX_HOME": str(codex_home),
        "SCRIPTED_API_KEY": FAKE_KEY,
        "OPENAI_API_KEY": FAKE_KEY,
        "CODEX_API_KEY": FAKE_KEY,
    }


# How each wiring points its agent at the model, for the report.
HOW = {
    "anthropic": "`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY` (Anthropic messages API)",
    "openai-responses": "a model provider in `$CODEX_HOME/config.toml` (`base_url`, `env_key`, `wire_api = "
    '"responses"`, model `gpt-5.5` so that codex offers `apply_patch`); the fake key also as `OPENAI_API_KEY`',
    "openai-chat": "`COPILOT_PROVIDER_BASE_URL`, `COPILOT_PROVIDER_TYPE=openai`, `COPILOT_PROVIDER_API_KEY`, "
    "`COPILOT_MODEL`, `COPILOT_OFFLINE=true` (chat completions)",
    "openai-compatible": "a provider on `@ai-sdk/openai-compatible` in `~/.config/opencode/opencode.json` "
    '(`baseURL`, `apiKey`), with `permission: {edit: "ask", bash: "ask"}` (chat completions)',
    "gemini": "`GOOGLE_GEMINI_BASE_URL`, `GEMINI_API_KEY` (Gemini API `streamGenerateContent`)",
}

# The session mode in which the agent asks before editing files (set through the public API before the edit
# checks): the v2 builds start in a mode that asks nothing (claude `auto`: a classifier; codex `agent`: an
# automatic reviewer), the v1 builds in one that asks (claude `default`; codex `auto` asks outside the workspace).
ASKING_MODE = {
    "anthropic": "default",
    "openai-responses": "read-only",
    "openai-chat": "",
    "openai-compatible": "",
    "gemini": "default",
}


def _copilot(home: Path, url: str) -> dict[str, str]:
    return {
        "COPILOT_PROVIDER_BASE_URL": f"{url}/v1",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_WIRE_API": "completions",
        "COPILOT_PROVIDER_API_KEY": FAKE_KEY,
        "COPILOT_MODEL": "gpt-4.1",
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
    }


def _opencode(home: Path, url: str) -> dict[str, str]:
    config = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": f"scripted/{MODEL}",
        "provider": {
            "scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted local model",
                "options": {"baseURL": f"{url}/v1", "apiKey": FAKE_KEY},
                "models": {MODEL: {"name": "Scripted model", "tool_call": True}},
            }
        },
        # opencode edits and runs commands without asking by default; the user's config asks instead.
        "permission": {"edit": "ask", "bash": "ask"},
    }
    folder = home / ".config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "opencode.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1"}


def _gemini(home: Path, url: str) -> dict[str, str]:
    return {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": FAKE_KEY}


WIRINGS: dict[str, Callable[[Path, str], dict[str, str]]] = {
    "gemini": _gemini,
    "openai-compatible": _opencode,
    "anthropic": _anthropic,
    "openai-responses": _codex,
    "openai-chat": _copilot,
}


def wire(kind: str, home: Path, url: str) -> dict[str, str]:
    """Write ``kind``'s config files into ``home``; returns the variables to add to the agent's environment."""
    try:
        how = WIRINGS[kind]
    except KeyError:
        raise ValueError(f"unknown model wiring {kind!r}; known: {', '.join(WIRINGS)}") from None
    return how(home, url)
