"""``--url URL [--header "Name: value"]... [--insecure | --ca-file PATH]``: chat with a remote agent (Streamable HTTP or
WebSocket) instead of starting one; its failures in plain words."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from acp_session.errors import ConnectionClosed, RemoteHttpError

from .messages import Failure

__all__ = ["add_remote_options", "check_remote_args", "connect_remote", "describe_remote"]


def add_remote_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--url",
        metavar="URL",
        default=None,
        help="a remote agent's endpoint instead of --agent: http(s)://HOST/acp (Streamable HTTP) or "
        "ws(s)://HOST/acp (WebSocket); needs the remote extra",
    )
    p.add_argument(
        "--header",
        metavar='"NAME: VALUE"',
        action="append",
        default=None,
        help='with --url: send this header on every request, e.g. "Authorization: Bearer TOKEN"; repeatable',
    )
    p.add_argument(
        "--insecure",
        action="store_true",
        help="with --url https:// or wss://: do not verify the server's TLS certificate",
    )
    p.add_argument(
        "--ca-file",
        metavar="PATH",
        default=None,
        help="with --url https:// or wss://: trust the CA certificates in this PEM file instead of the default ones "
        "(a private CA); default: $SSL_CERT_FILE if set",
    )


def check_remote_args(args: argparse.Namespace) -> str | None:
    """Check the remote options (a usage error, or None) and set what the rest of the CLI reads of the agent."""
    url = getattr(args, "url", None)
    if url is None:
        if getattr(args, "header", None) or getattr(args, "insecure", False) or getattr(args, "ca_file", None):
            return "--header, --insecure and --ca-file go with --url"
        return None
    from acp_session.transport.remote import RemoteDialer, parse_header, resolve_ca_file  # only for --url

    if args.agent is not None:
        return "--url and --agent do not go together"
    if args.ca_file and args.insecure:
        return "--ca-file and --insecure do not go together (--insecure checks no certificate)"
    args.ca_file = resolve_ca_file(args.ca_file, insecure=args.insecure)
    try:
        args.headers = [parse_header(text) for text in args.header or ()]
        dialer = RemoteDialer(url, headers=args.headers, insecure=args.insecure, ca_file=args.ca_file)
    except ValueError as exc:
        return f"--url / --header / --ca-file: {exc}"
    args.agent_command = None
    args.agent_argv = [dialer.display_url]  # what messages show of the agent: never a credential
    args.agent_key = dialer.display_url  # recent sessions (chat -c) are this endpoint's
    return None


def connect_remote(builder: Any, args: argparse.Namespace, initialize_timeout: float | None) -> Any:
    """``connect_url`` for ``--url``. ``--init-timeout`` bounds the dial too (as ``connect_timeout``, when it is
    the shorter): over WebSocket the upgrade comes before ``initialize``, and a server that dribbles its ``101``
    must not hold the command past the time the user allowed."""
    from acp_session.transport.remote import DEFAULT_REMOTE_LIMITS

    limits = DEFAULT_REMOTE_LIMITS
    if initialize_timeout is not None and initialize_timeout < limits.connect_timeout:
        limits = dataclasses.replace(limits, connect_timeout=initialize_timeout)
    return builder.connect_url(
        args.url,
        headers=args.headers,
        insecure=args.insecure,
        ca_file=args.ca_file,
        initialize_timeout=initialize_timeout,
        limits=limits,
    )


def describe_remote(exc: BaseException, url: str) -> Failure | None:
    """A remote connection's failure in plain words (None: not one of its own)."""
    from acp_session.transport.remote import (
        RemoteCertificateError,
        RemoteExtraMissing,
        RemoteTransportError,
        redact_url,
    )

    where = redact_url(url)
    kind = type(exc).__name__
    if isinstance(exc, RemoteExtraMissing):  # this install's, not the agent's: it says what to install
        return Failure(str(exc), kind)
    if isinstance(exc, RemoteHttpError) and exc.status in (401, 403):
        return Failure(
            f"the agent at {where} refused the credentials (HTTP {exc.status}); "
            'pass them with --header "Authorization: Bearer TOKEN"',
            kind,
            code=exc.code,
        )
    if isinstance(exc, RemoteHttpError):
        return Failure(f"the agent at {where} failed a request: {exc.message}", kind, code=exc.code)
    if isinstance(exc, RemoteCertificateError):
        return Failure(
            f"could not talk to the agent at {where}: {exc}; its certificate is not trusted: "
            "--ca-file PATH trusts its CA (--insecure skips the check)",
            kind,
        )
    if isinstance(exc, RemoteTransportError):
        return Failure(f"could not talk to the agent at {where}: {exc}", kind)
    if isinstance(exc, ConnectionClosed):
        return Failure(f"the connection to the agent at {where} ended: {exc.reason}", kind)
    return None
