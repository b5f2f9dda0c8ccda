"""Deterministic behaviours chosen by the prompt: ``/name args`` runs a scenario, anything else gets an offline
assistant's short reply (``engine``). Every scenario is also advertised as an available command, in the order
they register: the baseline's (``baseline``), then those beyond the baseline protocol (``extensions``)."""

from __future__ import annotations

from . import baseline, extensions
from .baseline import EDIT_DIR, EDITS, LOCKED
from .engine import SCENARIOS, Scenario, TurnContext, TurnFailed, available_commands, offline_reply, parse_prompt

__all__ = [
    "EDITS",
    "EDIT_DIR",
    "LOCKED",
    "SCENARIOS",
    "Scenario",
    "TurnContext",
    "TurnFailed",
    "available_commands",
    "baseline",
    "extensions",
    "offline_reply",
    "parse_prompt",
]
