"""What a check ends with besides passing: ``Fail`` (a MUST broken, naming the rule), ``NotApplicable`` and
``LoginRequired``; the probe raises them too, on behalf of the check it serves."""

from __future__ import annotations

from typing import Any

__all__ = ["AUTH_REQUIRED", "ErrorAnswer", "Fail", "LoginRequired", "NotApplicable"]

AUTH_REQUIRED = -32000


class Fail(Exception):
    """A check failed; ``rule`` names the rule (ACP2-NNN, ACP1-NNN or a schema/docs reference) it violates;
    ``offending``: the line the agent wrote that breaks it, when there is one (the reports highlight it)."""

    def __init__(self, rule: str, message: str, *, offending: bytes | str | None = None) -> None:
        super().__init__(f"{rule}: {message}")
        self.rule = rule
        self.offending = offending


class ErrorAnswer(Fail):
    """The agent answered a request with an error where a result was needed; ``code`` is the error's."""

    def __init__(self, rule: str, message: str, code: Any) -> None:
        super().__init__(rule, message)
        self.code = code


class NotApplicable(Exception):
    """The check cannot run against this agent (capability not advertised, no scenario for it, ...)."""


class LoginRequired(Exception):
    """The agent refused ``method`` with -32000 (authentication required)."""

    def __init__(self, method: str, error: Any) -> None:
        message = error.get("message") if isinstance(error, dict) else None
        super().__init__(f"{method} answered {AUTH_REQUIRED} {message!r}" if message else f"{method}: {AUTH_REQUIRED}")
        self.method = method
        self.error = error
