"""What a permission handler (``ClientBuilder.on_request_permission``) may answer, and the response it becomes.

The answer is typed, so a handler that returns anything else (the chosen ``PermissionOption`` instead of its
``option_id``, say) is a type checker's error where it is registered, not a request answered cancelled at run
time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ..schema.types import (
    CancelledPermissionOutcome,
    PermissionOption,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedPermissionOutcome,
)

if TYPE_CHECKING:
    from typing import TypeAlias

__all__ = ["PermissionAnswer", "PermissionHandler", "permission_response"]

PermissionAnswer: TypeAlias = (
    str | SelectedPermissionOutcome | CancelledPermissionOutcome | RequestPermissionResponse | None
)
"""A permission handler's answer: the chosen option's ``option_id`` (it must be one the request offers), None for
the cancelled outcome (never an approval), an outcome, or the whole response."""

PermissionHandler: TypeAlias = Callable[[RequestPermissionRequest], PermissionAnswer | Awaitable[PermissionAnswer]]
"""A permission handler: a plain function or a coroutine function of the request, giving a ``PermissionAnswer``."""

CANCELLED_PERMISSION = RequestPermissionResponse(outcome=CancelledPermissionOutcome())


def permission_response(answer: object) -> RequestPermissionResponse:
    """The response a handler's answer stands for; ``TypeError`` for anything that is not a ``PermissionAnswer``
    (the caller logs it and answers cancelled)."""
    if isinstance(answer, RequestPermissionResponse):
        return answer
    if isinstance(answer, (SelectedPermissionOutcome, CancelledPermissionOutcome)):
        return RequestPermissionResponse(outcome=answer)
    if isinstance(answer, str):
        return RequestPermissionResponse(outcome=SelectedPermissionOutcome(option_id=answer))
    if answer is None:
        return CANCELLED_PERMISSION
    if isinstance(answer, PermissionOption):
        raise TypeError(
            f"a permission handler returned the PermissionOption {answer.option_id!r}: return its option_id"
        )
    raise TypeError(
        f"a permission handler returned {type(answer).__name__}, not an option id, None, an outcome or a response"
    )
