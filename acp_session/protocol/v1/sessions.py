"""What the v1 adapter keeps per session to synthesise the model: message ids, modes, models, options.

v1 has no ``messageId`` (it is optional on chunks and few agents send one), no plan id, and modes and
models beside config options rather than as config options. Sans-IO: plain bookkeeping, no wire access.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET

from ...schema import types as m
from .turns import TurnOrder

__all__ = ["ModelChoice", "ModelState", "V1Session"]


class ModelChoice(msgspec.Struct, rename="camel", kw_only=True):
    """One entry of the ``models`` field that several v1 agents send on ``session/new``.

    ``models`` / ``session/set_model`` never made it into the v1 schema this library is generated
    from, so this one shape is written by hand; anything that does not fit it is ignored.
    """

    model_id: str
    name: str
    description: str | None = None


class ModelState(msgspec.Struct, rename="camel", kw_only=True):
    current_model_id: str
    available_models: list[ModelChoice]


class _Models(msgspec.Struct):
    models: ModelState | None = None


_MODELS = msgspec.json.Decoder(_Models)


def read_models(raw: bytes) -> ModelState | None:
    """The ``models`` field of a raw ``session/new`` / ``session/load`` result, if it has that shape."""
    try:
        return _MODELS.decode(raw).models
    except msgspec.DecodeError:
        return None


class V1Session:
    """Per-session state of the v1 adapter."""

    __slots__ = (
        "agent_options",
        "current_kind",
        "current_message",
        "mode_option_id",
        "model_option_id",
        "models",
        "modes",
        "next_id",
        "session_id",
        "turns",
    )

    plan_id = "plan"
    """v1 has one plan per session; the model names it."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.next_id = 0
        self.current_kind: type | None = None  # the chunk type of the message being streamed, if any
        self.current_message = ""
        self.agent_options: list[Any] = []
        self.modes: Any = None  # v1 SessionModeState
        self.models: ModelState | None = None
        self.mode_option_id = "mode"
        self.model_option_id = "model"
        self.turns = TurnOrder()  # prompts not answered yet: each answer ends its own turn only

    # -- message ids ---------------------------------------------------------------------------------------

    def new_id(self, role: str) -> str:
        self.next_id += 1
        return f"{role}-{self.next_id}"

    def chunk_message_id(self, kind: type, role: str) -> str:
        """The id of the message a chunk of ``kind`` belongs to: a run of chunks of one kind is one message."""
        if kind is not self.current_kind:
            self.current_kind = kind
            self.current_message = self.new_id(role)
        return self.current_message

    def end_message(self) -> None:
        """Something other than a chunk of the current message came: the next chunk starts a new message."""
        self.current_kind = None

    # -- modes and models as config options ----------------------------------------------------------------

    def set_modes(self, modes: Any) -> None:
        if modes is not None and modes is not UNSET:
            self.modes = modes

    def set_current_mode(self, mode_id: str) -> None:
        if self.modes is not None:
            self.modes = msgspec.structs.replace(self.modes, current_mode_id=mode_id)

    def set_current_model(self, model_id: str) -> None:
        if self.models is not None:
            self.models = msgspec.structs.replace(self.models, current_model_id=model_id)

    def options(self) -> list[Any]:
        """The agent's config options plus a ``mode`` and a ``model`` select built from v1 modes and models,
        unless the agent already reports options of those categories."""
        out = list(self.agent_options)
        categories = {getattr(option, "category", None) for option in out}
        taken = {getattr(option, "config_id", None) for option in out}
        if self.modes is not None and "mode" not in categories:
            self.mode_option_id = "mode" if "mode" not in taken else "session_mode"
            modes = [(mode.id, mode.name, mode.description) for mode in self.modes.available_modes]
            out.extend(_select(self.mode_option_id, "Mode", "mode", self.modes.current_mode_id, modes))
        if self.models is not None and "model" not in categories:
            self.model_option_id = "model" if "model" not in taken else "session_model"
            models = [(model.model_id, model.name, model.description) for model in self.models.available_models]
            out.extend(_select(self.model_option_id, "Model", "model", self.models.current_model_id, models))
        return out

    def is_mode_option(self, config_id: str) -> bool:
        return self.modes is not None and config_id == self.mode_option_id and not self._agent_has(config_id)

    def is_model_option(self, config_id: str) -> bool:
        return self.models is not None and config_id == self.model_option_id and not self._agent_has(config_id)

    def _agent_has(self, config_id: str) -> bool:
        return any(getattr(option, "config_id", None) == config_id for option in self.agent_options)


def _select(config_id: str, name: str, category: str, current: str, choices: list[tuple[str, str, Any]]) -> list[Any]:
    """A synthesised ``select`` option (none when there is nothing to choose)."""
    if not choices:
        return []
    options = [
        m.SessionConfigSelectOption(value=value, name=label, description=UNSET if about is None else about)
        for value, label, about in choices
    ]
    return [
        m.SessionConfigSelect(config_id=config_id, name=name, category=category, current_value=current, options=options)
    ]
