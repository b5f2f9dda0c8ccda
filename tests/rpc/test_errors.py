"""The error hierarchy is rooted in jsonrpc-base so its users catch ours."""

from __future__ import annotations

import pytest
from jsonrpc_base import JSONRPCError, ProtocolError, TransportError

from acp_session import errors


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (-32700, errors.ParseError),
        (-32600, errors.InvalidRequest),
        (-32601, errors.MethodNotFound),
        (-32602, errors.InvalidParams),
        (-32603, errors.InternalError),
        (-32800, errors.RequestCancelled),
        (-32000, errors.AuthRequired),
        (-32002, errors.ResourceNotFound),
        (-32022, errors.UnsupportedProtocolVersion),
    ],
)
def test_from_error_picks_subclass(code: int, cls: type[errors.RpcError]) -> None:
    err = errors.RpcError.from_error(code, "msg", {"k": 1})
    assert type(err) is cls and isinstance(err, ProtocolError) and isinstance(err, errors.AcpError)
    assert (err.code, err.message, err.data) == (code, "msg", {"k": 1})
    assert err.args == (code, "msg", {"k": 1})  # same shape as jsonrpc-base's ProtocolError
    assert cls().code == code


def test_unknown_code_is_plain_rpc_error() -> None:
    err = errors.RpcError.from_error(-31999, "x")
    assert type(err) is errors.RpcError and err.code == -31999


def test_transport_errors() -> None:
    closed = errors.ConnectionClosed("gone", exit_code=3, stderr_tail=["boom"])
    assert isinstance(closed, TransportError) and isinstance(closed, JSONRPCError)
    assert closed.exit_code == 3 and closed.stderr_tail == ("boom",) and "boom" in str(closed)
    too_big = errors.MessageTooLarge(100, 10)
    assert isinstance(too_big, TransportError) and (too_big.size, too_big.limit) == (100, 10)
    assert isinstance(errors.RequestTimeout("t"), TimeoutError)
