"""The reference agent's session configuration: one select option and one boolean option."""

from __future__ import annotations

from dataclasses import dataclass

from acp_session.errors import InvalidParams
from acp_session.schema.types import (
    SessionConfigBoolean,
    SessionConfigOption,
    SessionConfigSelect,
    SessionConfigSelectOption,
    SetSessionConfigOptionBooleanRequest,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionValueIdRequest,
)

__all__ = ["MODE_VALUES", "ConfigValues", "apply_config"]

MODE_ID = "mode"
THOUGHTS_ID = "thoughts"
MODE_VALUES: dict[str, str] = {"ask": "Ask", "code": "Code", "review": "Review"}


@dataclass
class ConfigValues:
    """Current values; every option has a default."""

    mode: str = "code"
    thoughts: bool = False

    def options(self) -> list[SessionConfigOption]:
        return [
            SessionConfigSelect(
                config_id=MODE_ID,
                name="Mode",
                category="mode",
                description="How the agent answers",
                current_value=self.mode,
                options=[SessionConfigSelectOption(value=value, name=name) for value, name in MODE_VALUES.items()],
            ),
            SessionConfigBoolean(
                config_id=THOUGHTS_ID,
                name="Show thoughts",
                description="Report an agent thought before each answer",
                current_value=self.thoughts,
            ),
        ]


def apply_config(values: ConfigValues, request: SetSessionConfigOptionRequest) -> None:
    """Apply one change, or raise ``-32602`` and leave ``values`` unchanged (ACP2-081, ACP2-082)."""
    if isinstance(request, SetSessionConfigOptionValueIdRequest):
        if request.config_id == MODE_ID:
            if request.value not in MODE_VALUES:
                raise InvalidParams(data={"configId": request.config_id, "reason": f"unknown value {request.value!r}"})
            values.mode = request.value
            return
        if request.config_id == THOUGHTS_ID:
            raise InvalidParams(data={"configId": request.config_id, "reason": "boolean option: send type boolean"})
    elif isinstance(request, SetSessionConfigOptionBooleanRequest):
        if request.config_id == THOUGHTS_ID:
            values.thoughts = request.value
            return
        if request.config_id == MODE_ID:
            raise InvalidParams(data={"configId": request.config_id, "reason": "select option: send a value id"})
    else:
        raise InvalidParams(data={"reason": f"unsupported value type {request.tag!r}"})
    raise InvalidParams(data={"configId": request.config_id, "reason": "unknown config option"})
