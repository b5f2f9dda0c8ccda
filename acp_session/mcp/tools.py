"""The client's own file system and terminals as an MCP server, for v2 agents (v2 has no ``fs/*`` or
``terminal/*`` methods: its migration guide has clients offer such tools as an MCP server instead).

The tools call the very providers a v1 agent reaches (``with_file_system()`` / ``with_terminals()`` or the
embedder's own), with the session's id, so confinement, limits and errors are the same; a write is reported to
the session's file listeners as a v1 ``fs/write_text_file`` is. Built on the official ``mcp`` SDK (the optional
``mcp`` extra), imported only when a session gets the server.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..client_errors import MissingExtra
from ..errors import AcpError, InvalidParams, ResourceNotFound
from ..providers import FileSystemProvider, TerminalProvider
from ..providers._roots import root_of
from ..schema.v1 import types as v1

if TYPE_CHECKING:
    from mcp.server import MCPServer as MCPServerLike

__all__ = ["SERVER_NAME", "ToolsBinding", "build_tools_server", "require_mcp"]

SERVER_NAME = "acp-session"
"""The name the built-in server has in a session's ``mcpServers``."""

MAX_LISTED = 1000
"""``list`` returns at most this many entries of one directory (and says when it left some out)."""


def require_mcp() -> None:
    """Raise ``MissingExtra`` naming the ``mcp`` extra when the official MCP SDK is not installed."""
    try:
        import mcp.server  # noqa: F401
    except ImportError as exc:
        raise MissingExtra(
            "mcp", "offering the client's file system and terminals to a protocol version 2 agent"
        ) from exc


@dataclass
class ToolsBinding:
    """What one session's built-in server serves: the providers, and the session it acts for (known once
    ``session/new`` is answered; a tool call that comes earlier waits for it)."""

    file_system: FileSystemProvider | None
    terminals: TerminalProvider | None
    session_id: Callable[[], Awaitable[str]]
    file_written: Callable[[str, str, str], None]


def _fail(exc: AcpError) -> Exception:
    # A tool error the agent's model can read: the provider's message, as a v1 agent would get it.
    from mcp.server.mcpserver.exceptions import ToolError

    return ToolError(str(getattr(exc, "message", None) or exc))


def build_tools_server(binding: ToolsBinding) -> Any:
    """An ``mcp`` ``MCPServer`` with the tools the binding's providers allow."""
    require_mcp()
    server = _quiet_server()
    files, terminals = binding.file_system, binding.terminals

    if files is not None and getattr(files, "can_read", True):

        @server.tool()
        async def read_text_file(path: str, line: int | None = None, limit: int | None = None) -> str:
            """Read a UTF-8 text file (absolute path) in the session's directories; line (1-based), limit: lines."""
            request = v1.ReadTextFileRequest(session_id=await binding.session_id(), path=path, line=line, limit=limit)
            try:
                return (await files.read_text_file(request)).content
            except AcpError as exc:
                raise _fail(exc) from None

        allowed_roots = getattr(files, "allowed_roots", None)
        if allowed_roots is not None:  # a LocalFileSystem (or one built on it): its roots confine the listing too

            @server.tool(name="list")
            async def list_directory(path: str) -> list[str]:
                """List a directory (absolute path) in the session's directories; directory names end in /."""
                import anyio

                try:
                    roots = allowed_roots(await binding.session_id())
                    return await anyio.to_thread.run_sync(_listing, path, roots)
                except AcpError as exc:
                    raise _fail(exc) from None

    if files is not None and getattr(files, "can_write", True):

        @server.tool()
        async def write_text_file(path: str, content: str) -> str:
            """Write a UTF-8 text file (absolute path) inside the session's directories, creating it if missing."""
            session_id = await binding.session_id()
            request = v1.WriteTextFileRequest(session_id=session_id, path=path, content=content)
            try:
                await files.write_text_file(request)
            except AcpError as exc:
                raise _fail(exc) from None
            binding.file_written(session_id, path, content)
            return f"wrote {len(content.encode('utf-8'))} bytes to {path}"

    if terminals is not None:
        _terminal_tools(server, binding, terminals)
    return server


def _quiet_server() -> MCPServerLike:
    """An ``MCPServer`` built without its constructor's ``logging.basicConfig`` call, which would configure the
    embedding application's root logger (an editor's log settings are not a library's to change)."""
    import mcp.server.mcpserver.server as sdk

    configure = getattr(sdk, "configure_logging", None)
    if configure is not None:
        setattr(sdk, "configure_logging", lambda *args, **kwargs: None)  # noqa: B010
    try:
        return sdk.MCPServer(SERVER_NAME, instructions="Files and commands of this machine, confined to the session.")
    finally:
        if configure is not None:
            setattr(sdk, "configure_logging", configure)  # noqa: B010


def _listing(path: str, roots: tuple[str, ...]) -> list[str]:
    """The names in ``path`` if it resolves inside ``roots`` (as the provider judges a file's path)."""
    if "\0" in path or not os.path.isabs(path):
        raise InvalidParams(message=f"path must be absolute: {path!r}", data={"path": path})
    resolved = os.path.realpath(path)
    if root_of(resolved, roots) is None:
        raise InvalidParams(message=f"{path} is outside the directories this session may access", data={"path": path})
    try:
        fd = os.open(resolved, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise ResourceNotFound(message=f"{path} is not a directory that can be listed: {exc.strerror}") from None
    try:
        with os.scandir(fd) as entries:
            names = sorted(e.name + ("/" if e.is_dir(follow_symlinks=False) else "") for e in entries)
    finally:
        os.close(fd)
    if len(names) > MAX_LISTED:
        return [*names[:MAX_LISTED], f"... {len(names) - MAX_LISTED} more entries not listed"]
    return names


def _exit(status: Any) -> dict[str, Any] | None:
    if status is None or not hasattr(status, "exit_code"):
        return None
    code, signal = status.exit_code, status.signal
    return {"exitCode": code if isinstance(code, int) else None, "signal": signal if isinstance(signal, str) else None}


def _terminal_tools(server: MCPServerLike, binding: ToolsBinding, terminals: TerminalProvider) -> None:
    @server.tool()
    async def terminal_create(
        command: str,
        args: list[str] | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        output_byte_limit: int | None = None,
    ) -> str:
        """Start a command (no shell: use sh -c) in the session's directory or cwd inside it; returns its id."""
        request = v1.CreateTerminalRequest(
            session_id=await binding.session_id(),
            command=command,
            args=list(args or []),
            env=[v1.EnvVariable(name=k, value=v) for k, v in (env or {}).items()],
            cwd=cwd,
            output_byte_limit=output_byte_limit,
        )
        try:
            return (await terminals.create_terminal(request)).terminal_id
        except AcpError as exc:
            raise _fail(exc) from None

    @server.tool()
    async def terminal_output(terminal_id: str) -> dict[str, Any]:
        """The terminal's output so far, whether it was truncated, and its exit status once it ended."""
        request = v1.TerminalOutputRequest(session_id=await binding.session_id(), terminal_id=terminal_id)
        try:
            out = await terminals.terminal_output(request)
        except AcpError as exc:
            raise _fail(exc) from None
        return {"output": out.output, "truncated": out.truncated, "exitStatus": _exit(out.exit_status)}

    @server.tool()
    async def terminal_wait(terminal_id: str) -> dict[str, Any]:
        """Wait for the terminal's command to exit; its exit code or signal."""
        request = v1.WaitForTerminalExitRequest(session_id=await binding.session_id(), terminal_id=terminal_id)
        try:
            status = await terminals.wait_for_terminal_exit(request)
        except AcpError as exc:
            raise _fail(exc) from None
        return _exit(status) or {}

    @server.tool()
    async def terminal_kill(terminal_id: str) -> str:
        """Kill the terminal's command (its output stays readable until terminal_release)."""
        request = v1.KillTerminalRequest(session_id=await binding.session_id(), terminal_id=terminal_id)
        try:
            await terminals.kill_terminal(request)
        except AcpError as exc:
            raise _fail(exc) from None
        return "killed"

    @server.tool()
    async def terminal_release(terminal_id: str) -> str:
        """Kill the command if it still runs and forget the terminal."""
        request = v1.ReleaseTerminalRequest(session_id=await binding.session_id(), terminal_id=terminal_id)
        try:
            await terminals.release_terminal(request)
        except AcpError as exc:
            raise _fail(exc) from None
        return "released"
