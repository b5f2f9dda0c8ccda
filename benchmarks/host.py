"""The host's cost to a user: the fold rate through ``acp-session serve`` beside the same agent over stdio, and the
memory of an idle host session.

**Fold rate.** A ``Conversation`` (acp-session's client) folds a turn of N ``agent_message_chunk`` updates from
``conversation_fold.py``'s agent (it writes pre-encoded chunk lines as fast as the pipe takes them), in each round:

* ``stdio``: the agent spawned by the client itself (the baseline);
* ``host, http`` and ``host, websocket``: the same agent behind ``acp-session serve`` run as a subprocess (what a
  user runs: the host in a process of its own, the client in this one), reached over Streamable HTTP and over
  WebSocket. A fresh host per measurement (the agent gives every session the same id).

The three alternate within each round (the same moments of the machine); each round's ratio host / stdio is
taken, and their median judged against the target (>= 0.5x). The CPU per update of the client (this process)
and of the host process (its threads' time on a CPU, ``/proc/PID/task/*/schedstat``, in ns; else clock ticks)
during the measured turn are
printed beside: on a shared, loaded machine they are steadier than the rates.

**Idle session memory.** A host of the reference agent (``acp-reference-agent``); one client opens ``--sessions``
sessions and goes away, leaving them idle on the host. The host process's RSS (``VmRSS``) after one session
and after all of them gives the bytes per idle session (the agent's own memory, in its own process, not
counted).

N stays under the host's update log bound (``HostOptions.max_log_entries``, 50 000): beyond it, a client that
reads more slowly than the agent writes falls off the log and its connection is ended (docs/serve.md).

Run: ``.venv/bin/python benchmarks/host.py [--n 40000] [--rounds 5] [--sessions 500] [--quick] [--json]``
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from acp_session import ClientBuilder, ClientConnection

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import conversation_fold  # noqa: E402

PROFILES = ("http", "websocket")
TARGET = 0.5


@contextmanager
def served(agent: list[str], profile: str | None = None) -> Iterator[tuple[str, int]]:
    """``acp-session serve --agent AGENT`` as a subprocess: its URL and pid; its event lines drained meanwhile.
    With ``profile``, the host runs under cProfile, its stats written there when it stops."""
    run = ["-m", "cProfile", "-o", profile] if profile else []
    argv = [sys.executable, *run, "-m", "acp_session.cli", "serve", "--agent", shlex.join(agent)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as host:
        assert host.stdout is not None
        try:
            url = host.stdout.readline().decode().strip()
            if not url.startswith("http"):
                raise RuntimeError(f"acp-session serve did not start (first line {url!r})")
            threading.Thread(target=host.stdout.read, daemon=True).start()
            yield url, host.pid
        finally:
            host.terminate()
            try:
                host.wait(10)
            except subprocess.TimeoutExpired:
                host.kill()


def cpu_seconds(pid: int) -> float:
    """CPU time of a process so far: its threads' time on a CPU in nanoseconds (``/proc/PID/task/*/schedstat``)
    where the kernel keeps it, else user + system in clock ticks (10 ms: coarse beside a turn's 0.1 s)."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        return sum(int((task / "schedstat").read_text().split()[0]) for task in tasks) / 1e9
    except (OSError, ValueError, IndexError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


async def fold(client: ClientConnection, n: int, pid: int | None = None) -> tuple[float, float, float | None]:
    """A warm-up turn, then the measured one: its rate (updates/s), this process's (the client's) CPU per update
    (µs) and, with ``pid``, that process's."""
    conversation = await client.start_conversation("/tmp", max_history_size=0)
    await conversation.chat_to_completion("warm up")
    gc.collect()
    cpu = cpu_seconds(pid) if pid is not None else 0.0
    own = time.process_time()
    start = time.perf_counter()
    response = await conversation.chat_to_completion("go")
    elapsed = time.perf_counter() - start
    own = time.process_time() - own
    used = cpu_seconds(pid) - cpu if pid is not None else None
    assert len(response.text) == 14 * n, len(response.text)
    return n / elapsed, own / n * 1e6, None if used is None else used / n * 1e6


async def stdio_rate(agent: list[str], n: int) -> tuple[float, float, float | None]:
    async with ClientBuilder("bench", "1").spawn(agent) as client:
        return await fold(client, n)


async def host_rate(url: str, n: int, pid: int) -> tuple[float, float, float | None]:
    async with ClientBuilder("bench", "1").connect_url(url) as client:
        return await fold(client, n, pid)


def measure_fold(n: int, rounds: int, backend: str, profile_dir: str | None = None) -> dict[str, Any]:
    runs: list[dict[str, float]] = []
    host_cpu: dict[str, list[float]] = {profile: [] for profile in PROFILES}
    client_cpu: dict[str, list[float]] = {name: [] for name in ("stdio", *(f"host, {p}" for p in PROFILES))}
    with tempfile.TemporaryDirectory() as tmp:
        chunk_file, agent_file = Path(tmp) / "chunks.jsonl", Path(tmp) / "agent.py"
        chunk_file.write_bytes(b"\n".join(conversation_fold.chunk_lines(n)) + b"\n")
        agent_file.write_text(conversation_fold.AGENT)
        agent = [sys.executable, str(agent_file), str(n), str(chunk_file)]
        for _ in range(rounds):
            rate, own, _ = anyio.run(stdio_rate, agent, n, backend=backend)
            run = {"stdio": rate}
            client_cpu["stdio"].append(own)
            for profile in PROFILES:
                with served(agent, profile_dir and f"{profile_dir}/host-{profile}.prof") as (url, pid):
                    if profile == "websocket":
                        url = "ws" + url.removeprefix("http")
                    rate, own, cpu = anyio.run(host_rate, url, n, pid, backend=backend)
                run[f"host, {profile}"] = rate
                client_cpu[f"host, {profile}"].append(own)
                if cpu is not None:
                    host_cpu[profile].append(cpu)
            runs.append(run)
    names = list(runs[0])
    ratios = {
        profile: statistics.median(run[f"host, {profile}"] / run["stdio"] for run in runs) for profile in PROFILES
    }
    return {
        "n": n,
        "rounds": rounds,
        "backend": backend,
        "median_fold_per_s": {name: statistics.median(run[name] for run in runs) for name in names},
        "best_fold_per_s": {name: max(run[name] for run in runs) for name in names},
        "median_ratio_to_stdio": ratios,
        "host_cpu_us_per_update": {profile: statistics.median(cpu) for profile, cpu in host_cpu.items() if cpu},
        "client_cpu_us_per_update": {name: statistics.median(cpu) for name, cpu in client_cpu.items()},
        "targets": {f"host, {profile}: fold >= {TARGET}x stdio": ratios[profile] >= TARGET for profile in PROFILES},
    }


async def open_idle(url: str, pid: int, sessions: int) -> tuple[int, int]:
    """The host's RSS with one idle session, then with ``sessions`` (the client gone each time)."""
    with tempfile.TemporaryDirectory() as cwd:
        async with ClientBuilder("bench", "1").connect_url(url) as client:
            await client.new_session(cwd)
        await anyio.sleep(0.5)  # the host notices the client gone
        gc.collect()
        one = rss_bytes(pid)
        async with ClientBuilder("bench", "1").connect_url(url) as client:
            for _ in range(sessions - 1):
                await client.new_session(cwd)
        await anyio.sleep(0.5)
        return one, rss_bytes(pid)


def measure_memory(sessions: int, backend: str) -> dict[str, Any]:
    agent = [sys.executable, "-m", "acp_conformance.agent"]
    with served(agent) as (url, pid):
        one, many = anyio.run(open_idle, url, pid, sessions, backend=backend)
    return {
        "sessions": sessions,
        "rss_one_session_bytes": one,
        "rss_all_sessions_bytes": many,
        "bytes_per_idle_session": (many - one) / (sessions - 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40_000, help="chunk updates in the measured turn")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=500, help="idle sessions opened for the memory figure")
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    parser.add_argument("--quick", action="store_true", help="a small run: N=2000, 1 round, 20 sessions")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile", metavar="DIR", help="run the hosts under cProfile, their stats written to DIR")
    args = parser.parse_args()
    if args.quick:
        args.n, args.rounds, args.sessions = 2000, 1, 20
    report = {
        "fold": measure_fold(args.n, args.rounds, args.backend, args.profile),
        "memory": measure_memory(args.sessions, args.backend),
    }
    if args.json:
        print(json.dumps(report))
        return
    result = report["fold"]
    print(
        f"Fold through acp-session serve (a subprocess) beside stdio: {args.n:,} chunk updates ({args.backend}), "
        f"{args.rounds} alternating rounds"
    )
    print(f"  {'client':<20} {'median/s':>10} {'best/s':>10}  CPU/update: client   host")
    for name, rate in result["median_fold_per_s"].items():
        cpu = result["host_cpu_us_per_update"].get(name.removeprefix("host, "))
        own = result["client_cpu_us_per_update"][name]
        print(
            f"  {name:<20} {rate:>10,.0f} {result['best_fold_per_s'][name]:>10,.0f}  {own:>14.2f} µs"
            f"{'' if cpu is None else f' {cpu:>5.2f} µs'}"
        )
    for profile, ratio in result["median_ratio_to_stdio"].items():
        met = "met" if ratio >= TARGET else "NOT met"
        print(f"  host, {profile} / stdio: {ratio:.2f}x (median of the rounds' ratios); target >= {TARGET}x: {met}")
    memory = report["memory"]
    print(f"Idle sessions on a host of the reference agent: {memory['sessions']} opened, the client gone")
    print(
        f"  host RSS with 1 session {memory['rss_one_session_bytes'] / 2**20:.1f} MiB, with {memory['sessions']} "
        f"{memory['rss_all_sessions_bytes'] / 2**20:.1f} MiB: "
        f"{memory['bytes_per_idle_session']:,.0f} bytes per idle session"
    )


if __name__ == "__main__":
    main()
