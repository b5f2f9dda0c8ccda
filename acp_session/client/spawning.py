"""What ``ClientBuilder.spawn`` runs: a command line, a registry id or an ``AgentCommand``, made one argv."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from ..registry import AgentCommand, Registry

__all__ = ["resolve_command"]


async def resolve_command(
    argv: str | Sequence[str] | AgentCommand,
    cwd: str | None,
    env: Mapping[str, str] | None,
    registry: Registry | str | os.PathLike[str] | None,
    channel: str,
) -> tuple[list[str], str | None, Mapping[str, str] | None, AbstractContextManager[None]]:
    """The argv, directory and environment to start, and what to hold while the agent runs.

    A string is a registry id or alias, resolved in a worker thread (a binary may be downloaded first); an
    ``AgentCommand`` brings its own environment, directory and an in-use hold on a registry binary's folder
    (no install removes it while the agent runs); a sequence runs as it is.
    """
    if isinstance(argv, str):
        from ..registry import resolve_agent

        name = argv
        argv = await anyio.to_thread.run_sync(lambda: resolve_agent(name, registry=registry, channel=channel))
    in_use: AbstractContextManager[None] = nullcontext()
    if not isinstance(argv, (str, Sequence)):  # an AgentCommand
        env = argv.environment(env)
        cwd = cwd if cwd is not None else argv.cwd
        in_use = argv.in_use()
        argv = argv.argv
    return list(argv), cwd, env, in_use
