"""Wire shapes of JSON-RPC 2.0 envelopes, encoded and decoded with msgspec.

Incoming ``params``/``result``/``error`` stay ``msgspec.Raw`` slices: the envelope is classified first and
the payload is decoded later, by the handler's or caller's own typed decoder.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import msgspec
from msgspec import UNSET, Raw, UnsetType

RequestId: TypeAlias = int | str
"""ACP request ids: a string or an integer, never null (ACP2-004)."""

CANCEL_REQUEST_METHOD = "$/cancel_request"


class IncomingEnvelope(msgspec.Struct):
    """Any single JSON-RPC message; which fields are present decides what it is."""

    jsonrpc: str | UnsetType = UNSET
    id: int | str | float | UnsetType | None = UNSET
    method: str | UnsetType = UNSET
    params: Raw | UnsetType = UNSET
    result: Raw | UnsetType = UNSET
    error: Raw | UnsetType = UNSET


class ErrorObject(msgspec.Struct, omit_defaults=True):
    code: int
    message: str
    data: Any = None


class CancelRequestParams(msgspec.Struct):
    requestId: int | str


class RequestOut(msgspec.Struct):
    jsonrpc: str
    id: int | str
    method: str
    params: Any = UNSET


class NotificationOut(msgspec.Struct):
    jsonrpc: str
    method: str
    params: Any = UNSET


class ResultOut(msgspec.Struct):
    jsonrpc: str
    id: int | str
    result: Any


class ErrorOut(msgspec.Struct):
    jsonrpc: str
    id: int | str | None
    error: ErrorObject


envelope_decoder = msgspec.json.Decoder(IncomingEnvelope)
error_decoder = msgspec.json.Decoder(ErrorObject)
cancel_params_decoder = msgspec.json.Decoder(CancelRequestParams)
encoder = msgspec.json.Encoder()

__all__ = [
    "CANCEL_REQUEST_METHOD",
    "CancelRequestParams",
    "ErrorObject",
    "ErrorOut",
    "IncomingEnvelope",
    "NotificationOut",
    "RequestId",
    "RequestOut",
    "ResultOut",
    "cancel_params_decoder",
    "encoder",
    "envelope_decoder",
    "error_decoder",
]
