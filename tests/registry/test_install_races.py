"""Time and concurrency (issue 41, items 6 and 7): a server that trickles a byte a second is cut off at the
deadline of the whole fetch; a process killed (SIGKILL) mid-download leaves nothing the next install keeps;
two processes installing one agent at once download it once and both run it; a version an agent runs from
is not removed under it by another process's install of a newer one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.registry import (
    DownloadTimedOut,
    RegistryLimits,
    RegistryOffline,
    current_platform,
    installed_folder,
    load_registry,
    resolve_agent,
)
from tests.cli.support import CLI, cli_env
from tests.registry.support import (
    RawServer,
    agent_tar,
    binary_entry,
    serve,
    sha256,
    slow_body,
    stalled_after,
    trickle_body,
    trickle_headers,
    write_registry,
)

PLATFORM = current_platform()
INSTALL = (  # a process of its own that installs ID from REGISTRY and prints the command
    "import sys; from acp_session.registry import resolve_agent as r; "
    "print(r(sys.argv[1], registry=sys.argv[2]).argv[0])"
)
QUICK = RegistryLimits(download_deadline=2.0, registry_deadline=2.0)


@pytest.fixture(autouse=True)
def cache(registry_cache: Path) -> Path:
    return registry_cache


@pytest.mark.parametrize("server", ["body", "headers"])
def test_a_trickling_download_ends_at_its_deadline(tmp_path: Path, server: str) -> None:
    behaviour = trickle_body(120) if server == "body" else trickle_headers()
    with RawServer(behaviour) as slow:
        registry = write_registry(tmp_path / "r.json", binary_entry("slow", PLATFORM, f"{slow.url}/a.tar.gz", None))
        started = time.monotonic()
        with pytest.raises(DownloadTimedOut) as caught:
            resolve_agent("slow", registry=registry, limits=QUICK)
        elapsed = time.monotonic() - started
    assert 1.5 < elapsed < 8, elapsed  # the stall timeout (30 s a read) never fired: the whole-download deadline did
    assert caught.value.deadline == 2.0 and "not complete within 2 s" in str(caught.value)
    assert not installed_folder("slow", "1.0.0", PLATFORM).exists()


def test_a_tls_handshake_that_never_comes_ends_at_its_deadline(tmp_path: Path) -> None:
    # The server takes the connection and the ClientHello, then says nothing: the watchdog must end the
    # connection during the TLS handshake too (the 30 s stall timeout would otherwise be what ends it).
    with RawServer(lambda server, sock: server.stop.wait()) as silent:
        url = silent.url.replace("http://", "https://") + "/a.tar.gz"
        registry = write_registry(tmp_path / "r.json", binary_entry("slow", PLATFORM, url, None))
        started = time.monotonic()
        with pytest.raises(DownloadTimedOut):
            resolve_agent("slow", registry=registry, limits=QUICK)
        assert time.monotonic() - started < 8


def test_a_trickling_registry_ends_at_its_deadline(tmp_path: Path) -> None:
    with RawServer(trickle_headers()) as slow:
        started = time.monotonic()
        with pytest.raises(RegistryOffline, match="not complete within 2 s"):
            load_registry(f"{slow.url}/registry.json", refresh=True, limits=QUICK)
        assert time.monotonic() - started < 8


def test_the_cli_does_not_hang_on_a_trickling_registry(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    with RawServer(trickle_headers(lines=200)) as slow:
        started = time.monotonic()
        run = subprocess.run(
            [CLI, "chat", "--agent", "some-agent", "--registry", f"{slow.url}/registry.json", "hi"],
            capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path,
        )  # fmt: skip
        elapsed = time.monotonic() - started
    assert run.returncode == 1 and "not complete within 10 s" in run.stderr, run.stderr
    assert elapsed < 40 and "Traceback" not in run.stderr


def _leftovers(cache: Path) -> list[str]:
    agents = cache / "acp-session" / "agents"
    return sorted(p.relative_to(agents).as_posix() for p in agents.glob("*/*/.*") if p.is_dir())


def test_a_download_killed_midway_leaves_nothing_that_lasts(tmp_path: Path, cache: Path) -> None:
    archive = agent_tar()
    padded = archive + b"\0" * 200_000  # big enough to be caught midway; never served whole
    with RawServer(stalled_after(padded, 100_000)) as stalled:
        registry = write_registry(tmp_path / "r.json", binary_entry("big", PLATFORM, f"{stalled.url}/a.tar.gz", None))
        child = subprocess.Popen([sys.executable, "-c", INSTALL, "big", str(registry)], env=os.environ.copy())
        try:
            deadline = time.monotonic() + 60
            while not any((cache / "acp-session").rglob("download")) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert any((cache / "acp-session").rglob("download")), "the child never started its download"
            time.sleep(0.5)  # the first 100 000 bytes are sent at once, then the server stalls
            child.send_signal(signal.SIGKILL)
        finally:
            child.kill()
            child.wait()
    assert _leftovers(cache), "the kill left no partial folder: the test proves nothing"
    # The next install (here of the same agent, from a server that answers) removes what the killed one left.
    with serve(tmp_path / "www") as www:
        entry = binary_entry("big", PLATFORM, www.put("a.tar.gz", archive), sha256(archive))
        command = resolve_agent("big", registry=write_registry(tmp_path / "r.json", entry))
    assert os.access(command.argv[0], os.X_OK)
    assert _leftovers(cache) == []


RUN_A_TURN = """
import sys, anyio
from acp_session import ClientBuilder

async def main() -> None:
    async with ClientBuilder().spawn("local-agent", registry=sys.argv[1]) as client:
        conversation = await client.start_conversation(sys.argv[2])
        print((await conversation.chat_to_completion("hello")).stop_reason)

anyio.run(main)
"""


def test_two_processes_installing_at_once_both_run_the_agent(tmp_path: Path, cache: Path) -> None:
    archive = agent_tar()
    with RawServer(slow_body(archive, pieces=40, interval=0.1)) as slow:  # about 4 s: the installs overlap
        entry = binary_entry("local-agent", PLATFORM, f"{slow.url}/a.tar.gz", sha256(archive))
        registry = write_registry(tmp_path / "r.json", entry)
        children = [
            subprocess.Popen(
                [sys.executable, "-c", RUN_A_TURN, str(registry), str(tmp_path)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        results = [child.communicate(timeout=120) for child in children]
    for child, (out, err) in zip(children, results, strict=True):
        assert child.returncode == 0, err
        assert out.strip() == "end_turn"
    assert slow.connections == 1  # the second waited for the first's install and used it
    assert _leftovers(cache) == []


@pytest.mark.anyio
async def test_a_version_an_agent_runs_from_is_kept_until_it_ends(tmp_path: Path) -> None:
    archive = agent_tar()
    with serve(tmp_path / "www") as www:
        url = www.put("a.tar.gz", archive)
        old = write_registry(tmp_path / "old.json", binary_entry("local-agent", PLATFORM, url, sha256(archive)))
        new = write_registry(
            tmp_path / "new.json", binary_entry("local-agent", PLATFORM, url, sha256(archive), version="1.1.0")
        )
        old_folder = installed_folder("local-agent", "1.0.0", PLATFORM)
        async with ClientBuilder().spawn("local-agent", registry=old) as client:
            # Another process installs the new version while the old one runs.
            other = await anyio.run_process([sys.executable, "-c", INSTALL, "local-agent", str(new)], check=True)
            assert other.stdout.decode().strip().startswith(str(installed_folder("local-agent", "1.1.0", PLATFORM)))
            assert old_folder.is_dir()
            conversation = await client.start_conversation(str(tmp_path))
            assert (await conversation.chat_to_completion("still there?")).stop_reason == "end_turn"
        # The agent ended: the next install of the new version removes the old one.
        await anyio.run_process([sys.executable, "-c", INSTALL, "local-agent", str(new)], check=True)
    assert not old_folder.exists() and installed_folder("local-agent", "1.1.0", PLATFORM).is_dir()
