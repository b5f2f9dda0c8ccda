"""MCP servers from the files people already keep (``.mcp.json``) and from one-line ``NAME=COMMAND ARGS``.

``{"mcpServers": {NAME: {"command", "args", "env"} | {"type": "http" | "sse", "url", "headers"}}}`` is the
format of ``.mcp.json`` files and of the editors that read them; each entry becomes the typed config of its
transport (``servers``), a command given by name resolved on PATH, since v2 requires an absolute path.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .servers import McpServerConfig, capability_for, http_server, sse_server, stdio_server, transport_of

__all__ = ["McpConfigError", "load_mcp_config", "mcp_servers_from", "parse_mcp_option", "split_offered"]


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
            raise McpConfigError(f"{where}: {exc}") from None
    if kind in ("http", "sse"):
        url = entry.get("url")
        if not isinstance(url, str) or not url:
            raise McpConfigError(f"{where}: 'url' must be a non-empty string")
        headers = _pairs(entry.get("headers", {}), f"{where}: 'headers'")
        return http_server(name, url, headers) if kind == "http" else sse_server(name, url, headers)
    raise McpConfigError(f"{where}: unknown type {kind!r} (stdio: 'command'; 'type': 'http' or 'sse' with 'url')")


def load_mcp_config(path: str | os.PathLike[str]) -> list[McpServerConfig]:
    """The servers of one ``.mcp.json``-style file, in file order."""
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except OSError as exc:
        raise McpConfigError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:
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
        raise McpConfigError(f"--mcp {name.strip()!r}: {exc}") from None


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
