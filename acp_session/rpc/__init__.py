"""Method-agnostic JSON-RPC 2.0 peer: a sans-IO core (``RpcCore``) and its anyio driver (``Connection``)."""

from .budget import answer_bound, reserve_answer
from .connection import Connection, FallbackNotificationHandler, FallbackRequestHandler, FrameErrorCallback
from .core import (
    BlockEvent,
    CancelRequested,
    Event,
    FrameTooLarge,
    NotificationReceived,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    RpcCore,
    TypedNotifications,
)
from .handlers import Decoder, invalid_params, json_decode
from .messages import CANCEL_REQUEST_METHOD, RequestId
from .pending import PendingRequest

__all__ = [
    "CANCEL_REQUEST_METHOD",
    "BlockEvent",
    "CancelRequested",
    "Connection",
    "Decoder",
    "Event",
    "FallbackNotificationHandler",
    "FallbackRequestHandler",
    "FrameErrorCallback",
    "FrameTooLarge",
    "NotificationReceived",
    "PendingRequest",
    "ProtocolViolation",
    "RequestId",
    "RequestReceived",
    "ResponseReceived",
    "RpcCore",
    "TypedNotifications",
    "answer_bound",
    "invalid_params",
    "json_decode",
    "reserve_answer",
]
