"""Install the pinned agents of ``agents.toml`` into a cache folder (default ``.cache/real-agents``).

    python -m dev.real_agents.install [--cache DIR] [--agent NAME ...]

Runs ``npm install --prefix DIR --no-audit --no-fund --save-exact PACKAGE@VERSION ...`` only for packages that
are missing or installed at another version; does nothing when every pin is already there. PACKAGE is the one the
agent's registry entry names (resolved with ``acp_session.registry.pinned_command``; see table.py), or the table's.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .table import DEFAULT_CACHE, REGISTRY, AgentSpec, TableError, load_agents

__all__ = ["InstallError", "install", "outdated"]


class InstallError(RuntimeError):
    """npm is missing or the install failed."""


def outdated(agents: Sequence[AgentSpec], cache: Path) -> list[AgentSpec]:
    """The agents whose pinned version is not installed in ``cache``."""
    return [agent for agent in agents if agent.installed_version(cache) != agent.version]


def install(agents: Sequence[AgentSpec], cache: Path, *, timeout: float = 1800) -> list[AgentSpec]:
    """Install what is missing or differs; returns the agents it installed."""
    todo = outdated(agents, cache)
    if not todo:
        return []
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError(
            "npm is not on PATH: install Node.js 20 or newer with npm, then rerun (the agents are npm packages)"
        )
    if shutil.which("node") is None:
        raise InstallError("node is not on PATH: install Node.js 20 or newer (the agents run on it)")
    cache.mkdir(parents=True, exist_ok=True)
    specs = sorted({agent.spec for agent in todo})
    command = [npm, "install", "--prefix", str(cache), "--no-audit", "--no-fund", "--save-exact", *specs]
    print("installing:", " ".join(specs), file=sys.stderr)
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise InstallError(f"npm install did not finish within {timeout:.0f} s") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-20:])
        raise InstallError(f"npm install failed (exit code {proc.returncode}):\n{tail}")
    still = outdated(todo, cache)
    if still:
        found = ", ".join(f"{a.package} {a.installed_version(cache) or 'missing'}" for a in still)
        raise InstallError(f"npm install finished but the pins are not installed: {found}")
    return todo


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dev.real_agents.install", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="install folder (default %(default)s)")
    parser.add_argument("--agent", action="append", default=[], metavar="NAME", help="only this agent (repeatable)")
    parser.add_argument("--registry", default=REGISTRY, help="where registry ids are looked up (default %(default)s)")
    args = parser.parse_args(argv)
    try:
        table = load_agents(registry=args.registry)
        unknown = [name for name in args.agent if name not in table]
        if unknown:
            parser.error(f"unknown agent(s) {unknown}; known: {', '.join(table)}")
        agents = [table[name] for name in args.agent] if args.agent else list(table.values())
        done = install(agents, args.cache)
    except (InstallError, TableError) as exc:
        print(f"dev.real_agents.install: {exc}", file=sys.stderr)
        return 2
    for agent in agents:
        state = "installed" if agent in done else "up to date"
        via = f" (registry id {agent.registry})" if agent.registry else ""
        print(f"{agent.name}: {agent.spec}{via} {state}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
