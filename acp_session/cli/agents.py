"""``acp-session agents``: the ACP registry's agents (list, info, install), and ``--agent ID`` for every command.

``agents`` lists the registry's agents (version, distribution kinds, what this platform can run, login kinds
when known); ``agents info ID`` shows one; ``agents install ID`` fetches it ahead of time (a binary into the
per-user cache, with a progress bar; an npx package into npm's cache). ``--registry FILE|URL`` (or
``ACP_SESSION_REGISTRY``) reads another registry; ``bundled`` is the snapshot inside the package.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any, TextIO

from acp_session.registry import (
    ALIASES,
    AgentCommand,
    Registry,
    RegistryAgent,
    RegistryError,
    bundled_registry,
    current_platform,
    find_agent,
    installed_folder,
    load_registry,
    named_agent,
    resolve_command,
)

from .screen import say

__all__ = ["ProgressBar", "add_registry_options", "agent_from_args", "main"]


class ProgressBar:
    """A one-line download bar on a terminal (``downloading codex-acp  12.0/40.0 MB [####------] 30%``); off a
    terminal, one line when the download is done."""

    def __init__(self, label: str, out: TextIO | None = None, width: int = 24) -> None:
        self.label = label
        self.out = out or sys.stderr
        self.width = width
        self.tty = self.out.isatty()
        self.received = 0
        self._shown = 0.0

    def __call__(self, received: int, total: int | None) -> None:
        self.received = received
        if not self.tty:
            return
        now = time.monotonic()
        if now - self._shown < 0.1 and received != total:
            return
        self._shown = now
        mb = received / 1e6
        if total:
            done = int(self.width * received / total)
            bar = "#" * done + "-" * (self.width - done)
            text = f"downloading {self.label} {mb:.1f}/{total / 1e6:.1f} MB [{bar}] {100 * received // total}%"
        else:
            text = f"downloading {self.label} {mb:.1f} MB"
        self.out.write(f"\r\x1b[K{text}")
        self.out.flush()

    def finish(self) -> None:
        if not self.received:
            return
        if self.tty:
            self.out.write("\r\x1b[K")
        self.out.write(f"downloaded {self.label} ({self.received / 1e6:.1f} MB)\n")
        self.out.flush()


def add_registry_options(parser: argparse.ArgumentParser, *, by_agent: bool = True) -> None:
    """``--registry`` and ``--preview``, for every command that starts an agent (``by_agent``: they go with its
    ``--agent ID``) and for ``agents`` itself."""
    parser.add_argument(
        "--registry",
        metavar="FILE|URL",
        default=None,
        help=f"the ACP agent registry{' for --agent ID' if by_agent else ''} (default: $ACP_SESSION_REGISTRY, else "
        "the official one, cached for a day; 'bundled': the snapshot in the package)",
    )
    parser.add_argument(
        "--preview",
        action="store_true",
        help="--agent ID: the agent's preview (pre-release) channel"
        if by_agent
        else "install: the agent's preview (pre-release) channel",
    )


def agent_from_args(args: argparse.Namespace) -> AgentCommand | None:
    """``--agent``'s value when it names a registry agent (an id or alias), resolved and installed; None when it
    is a command line (or absent). ``RegistryError`` says why an id cannot be run."""
    value = getattr(args, "agent", None)
    if value is None:
        return None
    bar = ProgressBar(value.strip())
    try:
        return named_agent(
            value,
            registry=getattr(args, "registry", None),
            channel="preview" if getattr(args, "preview", False) else "stable",
            progress=bar,
        )
    finally:
        bar.finish()


# ---------------------------------------------------------------------------------------------- agents


def _auth_kinds(registry: Registry) -> dict[str, list[str]]:
    """Login kinds per agent as last observed (the registry itself has none: the bundled snapshot records
    what the registry's protocol matrix saw agents advertise)."""
    info = registry.snapshot or bundled_registry().snapshot
    return dict(info.auth_methods) if info is not None else {}


def _aliases_of(agent_id: str) -> list[str]:
    return [alias for alias, target in ALIASES.items() if target == agent_id and alias != agent_id]


def _runs_here(agent: RegistryAgent, platform: str) -> list[str]:
    dist = agent.distribution
    kinds = [f"binary ({platform})"] if platform in dist.binary else []
    return kinds + [kind for kind in ("npx", "uvx") if getattr(dist, kind) is not None]


def _agent_json(agent: RegistryAgent, auth: dict[str, list[str]], platform: str) -> dict[str, Any]:
    return {
        "id": agent.id,
        "name": agent.name,
        "version": agent.version,
        "description": agent.description,
        "distribution": list(agent.distribution.kinds),
        "runsHere": _runs_here(agent, platform),
        "preview": agent.preview.version if agent.preview is not None else None,
        "auth": auth.get(agent.id),
        "aliases": _aliases_of(agent.id),
        "repository": agent.repository,
        "website": agent.website,
        "license": agent.license,
    }


def _list(registry: Registry, as_json: bool, out: TextIO) -> int:
    auth = _auth_kinds(registry)
    platform = current_platform()
    if as_json:
        for agent in registry.agents:
            out.write(json.dumps(_agent_json(agent, auth, platform)) + "\n")
        return 0
    rows = [("ID", "VERSION", "DISTRIBUTION", "LOGIN", "NAME")]
    for agent in sorted(registry.agents, key=lambda a: a.id):
        here = _runs_here(agent, platform)
        kinds = " ".join(agent.distribution.kinds)
        if not here:
            kinds += f" (none for {platform})"
        alias = _aliases_of(agent.id)
        name = agent.name + (f"  [alias: {', '.join(alias)}]" if alias else "")
        rows.append((agent.id, agent.version, kinds, ",".join(auth.get(agent.id, [])) or "-", name))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        say("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4], out)  # cleaned
    out.write(f"\n{len(registry.agents)} agents from {registry.origin}; start one with --agent ID\n")
    return 0


def _info(registry: Registry, name: str, as_json: bool, out: TextIO) -> int:
    agent = find_agent(registry, name)
    auth = _auth_kinds(registry)
    platform = current_platform()
    command: AgentCommand | None
    try:
        command = resolve_command(agent, install=False)
        problem = None
    except RegistryError as exc:
        command, problem = None, str(exc)
    installed = None
    if platform in agent.distribution.binary:
        folder = installed_folder(agent.id, agent.version, platform)
        installed = str(folder) if folder.exists() else None
    if as_json:
        record = _agent_json(agent, auth, platform)
        record.update(
            command=command.argv if command else None,
            env=command.env if command else None,
            problem=problem,
            installed=installed,
            origin=registry.origin,
        )
        out.write(json.dumps(record) + "\n")
        return 0
    lines = [
        f"{agent.name} ({agent.id}) {agent.version}",
        agent.description,
        "",
        f"aliases:       {', '.join(_aliases_of(agent.id)) or '-'}",
        f"distribution:  {', '.join(agent.distribution.kinds)}",
        f"runs here:     {', '.join(_runs_here(agent, platform)) or f'nothing for {platform}'}",
        f"preview:       {agent.preview.version if agent.preview is not None else '-'}",
        f"login kinds:   {', '.join(auth.get(agent.id, [])) or 'unknown'}",
        f"license:       {agent.license or '-'}",
        f"repository:    {agent.repository or '-'}",
        f"website:       {agent.website or '-'}",
        f"command:       {' '.join(command.argv) if command else problem}",
    ]
    if command is not None and command.env:
        lines.append(f"environment:   {' '.join(f'{k}={v}' for k, v in command.env.items())}")
    if platform in agent.distribution.binary:
        lines.append(f"installed:     {installed or 'no (acp-session agents install ' + agent.id + ')'}")
    lines.append(f"registry:      {registry.origin}")
    say("\n".join(lines), out)  # the registry's strings, cleaned for the terminal
    return 0


def _install(registry: Registry, name: str, preview: bool, out: TextIO) -> int:
    agent = find_agent(registry, name)
    bar = ProgressBar(agent.id)
    try:
        command = resolve_command(agent, channel="preview" if preview else "stable", progress=bar)
    finally:
        bar.finish()
    if command.kind == "binary":
        out.write(f"{agent.id} {command.version} installed: {command.argv[0]}\n")
        return 0
    if command.kind == "npx":
        package = command.package  # checked against npm's name rules by resolve_command
        sys.stderr.write(f"fetching {package} into npm's cache\u2026\n")
        fetched = subprocess.run(
            [command.argv[0], "--yes", f"--package={package}", "--", "node", "-e", ""],
            stdin=subprocess.DEVNULL,
            check=False,
        )
        if fetched.returncode != 0:
            sys.stderr.write(f"acp-session: npx could not fetch {package} (exit {fetched.returncode})\n")
            return 1
        out.write(f"{agent.id} {command.version} ready: {' '.join(command.argv)}\n")
        return 0
    out.write(f"{agent.id} {command.version}: uvx fetches it when it first starts ({' '.join(command.argv)})\n")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-session agents",
        description="The agents of the ACP agent registry: list them, show one, install one. Start one with "
        "`acp-session chat --agent ID` (aliases: " + ", ".join(f"{a}={t}" for a, t in ALIASES.items()) + ").",
    )
    parser.add_argument("--json", action="store_true", help="list, info: one JSON object per agent")
    parser.add_argument("--refresh", action="store_true", help="fetch the registry now instead of the day's copy")
    add_registry_options(parser, by_agent=False)
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.add_parser("list", help="every agent (the default)")
    info = sub.add_parser("info", help="one agent: its distributions, the command it runs with here, login kinds")
    info.add_argument("id", metavar="ID")
    install = sub.add_parser("install", help="fetch an agent now (a binary into the cache, an npx package)")
    install.add_argument("id", metavar="ID")
    for p in (info, install):
        p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        p.add_argument("--preview", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        p.add_argument("--registry", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return parser


def main(argv: list[str]) -> int:
    """Run ``acp-session agents ...``; the exit code (1 when the registry or the agent could not be used)."""
    args = _parser().parse_args(argv)
    out = sys.stdout
    try:
        registry = load_registry(args.registry, refresh=True if args.refresh else None)
        if args.action == "info":
            return _info(registry, args.id, args.json, out)
        if args.action == "install":
            return _install(registry, args.id, args.preview, out)
        return _list(registry, args.json, out)
    except RegistryError as exc:
        sys.stderr.write(f"acp-session: {exc}\n")
        return 1
    except OSError as exc:
        sys.stderr.write(f"acp-session: {exc}\n")
        return 1
