"""MCP servers from the files people already keep (``.mcp.json``) and from one-line ``NAME=COMMAND ARGS``.

``{"mcpServers": {NAME: {"command", "args", "env"} | {"type": "http" | "sse", "url", "headers"}}}`` is the
format of ``.mcp.json`` files and of the editors that read them; each entry becomes the typed config of its
transport (``servers``), a command given by name resolved on PATH, since v2 requires an absolute path.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .servers import (
    McpServerConfig,
    UnsafeMcpServer,
    capability_for,
    http_server,
    sse_server,
    stdio_server,
    transport_of,
)

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_CONFIG_DEPTH",
    "McpConfigError",
    "load_mcp_config",
    "mcp_servers_from",
    "parse_mcp_option",
    "split_offered",
]

MAX_CONFIG_BYTES = 1 << 20
"""A config file larger than this (1 MiB) is refused unread: ``.mcp.json`` files are a few hundred bytes."""

MAX_CONFIG_DEPTH = 32
"""Arrays and objects nested deeper than this are refused before parsing (the format needs 4 levels), so a
hostile file cannot exhaust the parser's recursion."""


class McpConfigError(ValueError):
    """An MCP config file or ``--mcp`` value that cannot be read; says which file and which server."""


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise McpConfigError(f"{what} must be a list of strings")
    return list(value)


def _pairs(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise McpConfigError(f"{what} must be an object of strings")
    return dict(value)


def server_from_entry(name: str, entry: Any) -> McpServerConfig:
    """One ``mcpServers`` entry as its typed config."""
    where = f"MCP server {name!r}"
    if not isinstance(entry, dict):
        raise McpConfigError(f"{where}: not an object")
    kind = entry.get("type", "stdio" if "command" in entry else "http" if "url" in entry else None)
    if kind == "stdio":
        command = entry.get("command")
        if not isinstance(command, str) or not command:
            raise McpConfigError(f"{where}: 'command' must be a non-empty string")
        try:
            return stdio_server(
                name,
                command,
                _strings(entry.get("args", []), f"{where}: 'args'"),
                _pairs(entry.get("env", {}), f"{where}: 'env'"),
            )
        except ValueError as exc:
            raise McpConfigError(f"{where}: {exc.problem if isinstance(exc, UnsafeMcpServer) else exc}") from None
    if kind in ("http", "sse"):
        url = entry.get("url")
        if not isinstance(url, str) or not url:
            raise McpConfigError(f"{where}: 'url' must be a non-empty string")
        headers = _pairs(entry.get("headers", {}), f"{where}: 'headers'")
        try:
            return http_server(name, url, headers) if kind == "http" else sse_server(name, url, headers)
        except ValueError as exc:
            raise McpConfigError(f"{where}: {exc.problem if isinstance(exc, UnsafeMcpServer) else exc}") from None
    raise McpConfigError(f"{where}: unknown type {kind!r} (stdio: 'command'; 'type': 'http' or 'sse' with 'url')")


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")


def _nesting(text: str, limit: int) -> int:
    """How deep ``text``'s arrays and objects nest (strings skipped), counted up to ``limit + 1``."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(_STRINGS.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                break
    return deepest


def load_mcp_config(path: str | os.PathLike[str]) -> list[McpServerConfig]:
    """The servers of one ``.mcp.json``-style file, in file order; ``McpConfigError`` for a file that cannot
    be read, is larger than ``MAX_CONFIG_BYTES``, nests deeper than ``MAX_CONFIG_DEPTH`` or is not the format."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise McpConfigError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # not UTF-8
        raise McpConfigError(f"{path}: not JSON ({exc})") from None
    if len(text) > MAX_CONFIG_BYTES:
        raise McpConfigError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes; not an MCP config")
    if _nesting(text, MAX_CONFIG_DEPTH) > MAX_CONFIG_DEPTH:
        raise McpConfigError(f"{path}: nested deeper than {MAX_CONFIG_DEPTH} levels; not an MCP config")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise McpConfigError(f"{path}: not JSON ({exc})") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f'{path}: expected {{"mcpServers": {{NAME: {{...}}}}}}')
    try:
        return [server_from_entry(name, entry) for name, entry in servers.items()]
    except McpConfigError as exc:
        raise McpConfigError(f"{path}: {exc}") from None


def parse_mcp_option(text: str) -> McpServerConfig:
    """``NAME=COMMAND ARG...`` (shell words) as a stdio server."""
    name, sep, command = text.partition("=")
    words = shlex.split(command) if sep else []
    if not name.strip() or not words:
        raise McpConfigError(f"--mcp {text!r}: expected NAME=COMMAND [ARG...]")
    try:
        return stdio_server(name.strip(), words[0], words[1:])
    except ValueError as exc:
        raise McpConfigError(
            f"--mcp {name.strip()!r}: {exc.problem if isinstance(exc, UnsafeMcpServer) else exc}"
        ) from None


def mcp_servers_from(files: Iterable[str | os.PathLike[str]], options: Iterable[str]) -> list[McpServerConfig]:
    """Every file's servers, then each ``--mcp``; a later server of the same name replaces the earlier one."""
    by_name: dict[str, McpServerConfig] = {}
    for path in files:
        for server in load_mcp_config(path):
            by_name.pop(str(getattr(server, "name", "")), None)
            by_name[str(getattr(server, "name", ""))] = server
    for text in options:
        server = parse_mcp_option(text)
        by_name.pop(str(getattr(server, "name", "")), None)
        by_name[str(getattr(server, "name", ""))] = server
    return list(by_name.values())


def split_offered(
    servers: Sequence[McpServerConfig], offered: frozenset[str], version: int
) -> tuple[list[McpServerConfig], list[Mapping[str, str]]]:
    """The servers whose transport the agent advertised, and a record for each other one (name, transport,
    the missing capability): the CLI sends the first and reports the second rather than failing the session."""
    sent: list[McpServerConfig] = []
    refused: list[Mapping[str, str]] = []
    for server in servers:
        kind = transport_of(server)
        if kind in offered:
            sent.append(server)
        else:
            capability = capability_for(kind, version)
            refused.append({"name": str(getattr(server, "name", "?")), "transport": kind, "capability": capability})
    return sent, refused
