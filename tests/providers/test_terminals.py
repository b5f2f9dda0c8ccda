"""LocalTerminals over real subprocesses: output, limits, environment, exit status, kills, and no process left."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
import msgspec
import pytest

from acp_session.errors import InternalError, InvalidParams, RequestCancelled, ResourceNotFound, RpcError
from acp_session.providers import LocalTerminals, TerminalProvider, minimal_environment
from acp_session.providers.terminals import complete_length, exit_status
from acp_session.schema import v1

pytestmark = pytest.mark.anyio

SH = "/bin/sh"
PY = sys.executable
SLEEPER = ["-c", "echo $$; exec sleep 30"]  # prints its pid, then sleeps as that same process
GRANDPARENT = ["-c", "sleep 30 & echo $!; wait"]  # prints the pid of a child that outlives nothing on its own
IGNORES_TERM = ["-c", "trap '' TERM; echo $$; while :; do sleep 0.05; done"]


def state(pid: int) -> bytes | None:
    """The process state letter from /proc (None once it is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie waiting for its (possibly slow) reaper."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return state(pid) not in (None, b"Z", b"X")


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes in process group ``pgid``."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                members.append(int(entry))
    return members


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return Path(os.path.realpath(root))


async def create(
    terms: LocalTerminals, command: str, args: list[str] | None = None, *, session: str = "s1", **kw: object
) -> str:
    request = v1.CreateTerminalRequest(session_id=session, command=command, args=args or [], **kw)  # type: ignore[arg-type]
    return (await terms.create_terminal(request)).terminal_id


async def output(terms: LocalTerminals, terminal_id: str, session: str = "s1") -> v1.TerminalOutputResponse:
    return await terms.terminal_output(v1.TerminalOutputRequest(session_id=session, terminal_id=terminal_id))


async def wait_exit(terms: LocalTerminals, terminal_id: str, session: str = "s1") -> v1.WaitForTerminalExitResponse:
    with anyio.fail_after(5):
        request = v1.WaitForTerminalExitRequest(session_id=session, terminal_id=terminal_id)
        return await terms.wait_for_terminal_exit(request)


async def kill(terms: LocalTerminals, terminal_id: str, session: str = "s1") -> None:
    await terms.kill_terminal(v1.KillTerminalRequest(session_id=session, terminal_id=terminal_id))


async def release(terms: LocalTerminals, terminal_id: str, session: str = "s1") -> None:
    await terms.release_terminal(v1.ReleaseTerminalRequest(session_id=session, terminal_id=terminal_id))


async def first_line(terms: LocalTerminals, terminal_id: str, session: str = "s1") -> str:
    """Poll until the command has printed a whole first line (a pid, or "ready")."""
    with anyio.fail_after(5):
        while "\n" not in (text := (await output(terms, terminal_id, session)).output):
            await anyio.sleep(0.005)
    return text.split("\n", 1)[0]


def assert_clean(error: RpcError) -> None:
    assert error.message and "Traceback" not in error.message


async def test_the_provider_satisfies_its_protocol() -> None:
    async with LocalTerminals() as terms:
        assert isinstance(terms, TerminalProvider)


async def test_output_exit_code_and_joined_streams(project: Path) -> None:
    async with LocalTerminals() as terms:
        terms.open_session("s1", str(project))
        tid = await create(terms, SH, ["-c", "echo out; echo err >&2; echo again; exit 3"])
        assert tid.startswith("term_")
        status = await wait_exit(terms, tid)
        assert (status.exit_code, status.signal) == (3, None)
        result = await output(terms, tid)
        assert result.output == "out\nerr\nagain\n"  # stdout and stderr share one pipe, in order
        assert result.truncated is False
        assert result.exit_status == v1.TerminalExitStatus(exit_code=3, signal=None)
        await release(terms, tid)


async def test_no_exit_status_while_running_and_wait_blocks_until_exit(project: Path) -> None:
    async with LocalTerminals() as terms:
        terms.open_session("s1", str(project))
        go = project / "go"
        tid = await create(terms, SH, ["-c", f"echo waiting; while [ ! -e {go} ]; do sleep 0.01; done; echo done"])
        assert await first_line(terms, tid) == "waiting"
        running = await output(terms, tid)
        assert running.exit_status is msgspec.UNSET  # omitted on the wire until the command has exited
        assert b"exitStatus" not in msgspec.json.encode(running)
        results: list[v1.WaitForTerminalExitResponse] = []

        async def waiter() -> None:
            results.append(await wait_exit(terms, tid))

        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await anyio.sleep(0.05)
            assert results == []
            go.touch()
        assert (results[0].exit_code, results[0].signal) == (0, None)
        assert (await output(terms, tid)).output == "waiting\ndone\n"


async def test_truncation_keeps_the_end_at_a_character_boundary(project: Path) -> None:
    """ACP1-009: output over the limit loses its beginning, cut at a character boundary, even if that leaves
    fewer bytes than the limit."""
    async with LocalTerminals() as terms:
        terms.open_session("s1", str(project))
        # "a" then ten 3-byte euro signs: 31 bytes; the last 7 start inside a character, so 6 are kept.
        tid = await create(terms, PY, ["-c", "import sys; sys.stdout.write('a' + '\u20ac' * 10)"], output_byte_limit=7)
        await wait_exit(terms, tid)
        result = await output(terms, tid)
        assert result.output == "\u20ac\u20ac"
        assert result.truncated is True
        # Four-byte characters, a limit that is not a multiple of 4.
        tid = await create(terms, PY, ["-c", "print('\U0001f600' * 5, end='')"], output_byte_limit=10)
        await wait_exit(terms, tid)
        assert (await output(terms, tid)).output == "\U0001f600\U0001f600"


async def test_the_smaller_of_the_two_limits_applies_and_memory_stays_bounded(project: Path) -> None:
    async with LocalTerminals(output_byte_limit=1000) as terms:
        terms.open_session("s1", str(project))
        big = "import sys; sys.stdout.write('x' * 2_000_000 + 'END')"
        tid = await create(terms, PY, ["-c", big], output_byte_limit=10_000_000)
        await wait_exit(terms, tid)
        result = await output(terms, tid)
        assert len(result.output) == 1000 and result.output.endswith("xEND") and result.truncated
        assert len(terms._terminals[tid].output) <= 1000
        tid = await create(terms, SH, ["-c", "echo 0123456789"], output_byte_limit=4)
        await wait_exit(terms, tid)
        assert (await output(terms, tid)).output == "789\n"
        tid = await create(terms, SH, ["-c", "echo hi"], output_byte_limit=0)
        await wait_exit(terms, tid)
        assert await output(terms, tid) == v1.TerminalOutputResponse(
            output="", truncated=True, exit_status=v1.TerminalExitStatus(exit_code=0, signal=None)
        )


async def test_a_character_split_across_writes_is_held_back_until_complete(project: Path) -> None:
    """ACP1-009: the output is valid text at every moment, even mid-character."""
    async with LocalTerminals() as terms:
        terms.open_session("s1", str(project))
        go = project / "go"
        script = (
            "import os, sys, time\n"
            "os.write(1, b'x\\xe2\\x82')\n"
            "while not os.path.exists(sys.argv[1]): time.sleep(0.005)\n"
            "os.write(1, b'\\xac\\n')\n"
        )
        tid = await create(terms, PY, ["-c", script, str(go)])
        with anyio.fail_after(5):
            while len(terms._terminals[tid].output) < 3:  # all three bytes have been read
                await anyio.sleep(0.005)
        assert (await output(terms, tid)).output == "x"
        go.touch()
        await wait_exit(terms, tid)
        assert (await output(terms, tid)).output == "x\u20ac\n"
        # At the end of output an incomplete or invalid sequence becomes a replacement character.
        tid = await create(terms, PY, ["-c", "import os; os.write(1, b'y\\xe2')"])
        await wait_exit(terms, tid)
        with anyio.fail_after(5):
            while not terms._terminals[tid].eof:
                await anyio.sleep(0.005)
        assert (await output(terms, tid)).output == "y\ufffd"


def test_complete_length() -> None:
    euro = "\u20ac".encode()
    assert complete_length(b"") == 0
    assert complete_length(b"ab") == 2
    assert complete_length(b"a" + euro) == 4
    assert complete_length(b"a" + euro[:2]) == 1
    assert complete_length(b"a" + euro[:1]) == 1
    assert complete_length("\U0001f600".encode()[:3]) == 0
    assert complete_length(b"\x80\x80\x80\x80") == 4  # not UTF-8 at all: nothing to wait for


def test_exit_status_names_the_signal() -> None:
    assert exit_status(0) == (0, None)
    assert exit_status(2) == (2, None)
    assert exit_status(-9) == (None, "SIGKILL")
    assert exit_status(-15) == (None, "SIGTERM")


async def test_environment_is_explicit(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACP_PARENT_ONLY", "must-not-leak")
    agent_vars = [v1.EnvVariable(name="FROM_AGENT", value="yes"), v1.EnvVariable(name="EMPTY", value="")]

    async def child_env(terms: LocalTerminals, variables: list[v1.EnvVariable]) -> dict[str, str]:
        tid = await create(terms, "/usr/bin/env", env=variables)
        await wait_exit(terms, tid)
        lines = (await output(terms, tid)).output.splitlines()
        return dict(line.split("=", 1) for line in lines)

    async with LocalTerminals() as terms:
        terms.open_session("s1", str(project))
        env = await child_env(terms, agent_vars)
        assert "ACP_PARENT_ONLY" not in env
        assert env["FROM_AGENT"] == "yes" and env["EMPTY"] == "" and env["TERM"] == "dumb"
        assert set(env) <= {"PATH", "HOME", "LANG", "LC_ALL", "TERM", "FROM_AGENT", "EMPTY"}
        assert env["PATH"] == os.environ.get("PATH", os.defpath)
        tid = await create(terms, "sleep", ["0"])  # a bare name is found on the command's PATH
        assert (await wait_exit(terms, tid)).exit_code == 0
    assert "ACP_PARENT_ONLY" not in minimal_environment()

    async with LocalTerminals(env={"ONLY": "1", "KEEP": "k"}) as terms:
        terms.open_session("s1", str(project))
        env = await child_env(terms, [v1.EnvVariable(name="ONLY", value="2")])
        assert env == {"ONLY": "2", "KEEP": "k"}


async def test_kill_reports_the_signal(project: Path) -> None:
    async with LocalTerminals(kill_grace=0.3) as terms:
        terms.open_session("s1", str(project))
        tid = await create(terms, SH, SLEEPER)
        pid = int(await first_line(terms, tid))
        await kill(terms, tid)
        assert not alive(pid)
        status = await wait_exit(terms, tid)
        assert (status.exit_code, status.signal) == (None, "SIGTERM")
        result = await output(terms, tid)  # still readable after a kill
        assert result.output == f"{pid}\n"
        assert result.exit_status == v1.TerminalExitStatus(exit_code=None, signal="SIGTERM")
        await kill(terms, tid)  # killing again is harmless


async def test_a_command_that_ignores_sigterm_gets_sigkill_after_the_grace(project: Path) -> None:
    async with LocalTerminals(kill_grace=0.2) as terms:
        terms.open_session("s1", str(project))
        tid = await create(terms, SH, IGNORES_TERM)
        pid = int(await first_line(terms, tid))
        started = time.monotonic()
        await kill(terms, tid)
        assert 0.2 <= time.monotonic() - started < 2
        assert not alive(pid) and group_members(pid) == []
        assert (await wait_exit(terms, tid)).signal == "SIGKILL"


async def test_release_kills_a_running_command_and_forgets_it(project: Path) -> None:
    async with LocalTerminals() as terms:
        terms.open_session("s1", str(project))
        tid = await create(terms, SH, SLEEPER)
        pid = int(await first_line(terms, tid))
        await release(terms, tid)
        assert not alive(pid)
        assert terms.terminal_ids == ()
        for call in (output, wait_exit, kill, release):
            with pytest.raises(ResourceNotFound, match="unknown or released terminal") as info:
                await call(terms, tid)
            assert info.value.code == -32002


async def test_a_grandchild_is_killed_with_the_command(project: Path) -> None:
    async with LocalTerminals() as terms:
        terms.open_session("s1", str(project))
        tid = await create(terms, SH, GRANDPARENT)
        grandchild = int(await first_line(terms, tid))
        pgid = os.getpgid(grandchild)
        assert alive(grandchild)
        await kill(terms, tid)
        assert not alive(grandchild)
        assert group_members(pgid) == []


async def test_exit_is_reported_while_a_grandchild_holds_the_output_open(project: Path) -> None:
    """The command's exit is its own: a background child still writing (or holding the pipe) does not delay it,
    and releasing the terminal ends that child too."""
    async with LocalTerminals() as terms:
        terms.open_session("s1", str(project))
        tid = await create(terms, SH, ["-c", "sleep 30 & echo $!; echo bye"])
        status = await wait_exit(terms, tid)
        assert (status.exit_code, status.signal) == (0, None)
        text = (await output(terms, tid)).output
        grandchild = int(text.split()[0])
        assert text.endswith("bye\n") and alive(grandchild)
        await release(terms, tid)
        assert not alive(grandchild)


async def test_close_session_ends_only_that_sessions_terminals(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    async with LocalTerminals() as terms:
        terms.open_session("s1", str(project))
        terms.open_session("s2", str(other))
        mine = [await create(terms, SH, SLEEPER), await create(terms, SH, GRANDPARENT)]
        theirs = await create(terms, SH, SLEEPER, session="s2")
        my_pids = [int(await first_line(terms, tid)) for tid in mine]
        their_pid = int(await first_line(terms, theirs, "s2"))
        await terms.close_session("s1")
        assert not any(alive(pid) for pid in my_pids)
        assert alive(their_pid)
        assert terms.terminal_ids == (theirs,)
        with pytest.raises(ResourceNotFound):
            await output(terms, mine[0])
        with pytest.raises(ResourceNotFound, match="unknown or closed session"):
            await create(terms, SH, SLEEPER)
        await terms.close_session("s1")  # closing twice is harmless
    assert not alive(their_pid)


async def test_leaving_the_provider_leaves_no_process_behind(project: Path) -> None:
    pids: list[int] = []
    groups: set[int] = set()
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="boom"):
        async with LocalTerminals(kill_grace=0.2) as terms:
            terms.open_session("s1", str(project))
            for args in (SLEEPER, GRANDPARENT, IGNORES_TERM):
                pid = int(await first_line(terms, await create(terms, SH, args)))
                pids.append(pid)
                groups.add(os.getpgid(pid))
            raise RuntimeError("boom")
    assert time.monotonic() - started < 2  # the terminals are ended concurrently, not one grace after another
    assert [pid for pid in pids if alive(pid)] == []
    assert len(groups) == 3  # each command in a group of its own
    assert {pgid: group_members(pgid) for pgid in groups} == {pgid: [] for pgid in groups}


async def test_cancellation_of_the_host_still_ends_every_process(project: Path) -> None:
    pids: list[int] = []
    with anyio.move_on_after(10) as scope:
        async with LocalTerminals() as terms:
            terms.open_session("s1", str(project))
            pids.append(int(await first_line(terms, await create(terms, SH, SLEEPER))))
            scope.cancel()
            await anyio.sleep(10)
    assert scope.cancelled_caught
    assert not alive(pids[0])
    with pytest.raises(RequestCancelled, match="shutting down"):
        await create(terms, SH, SLEEPER)


async def test_max_terminals(project: Path) -> None:
    async with LocalTerminals(max_terminals=2) as terms:
        terms.open_session("s1", str(project))
        first = await create(terms, SH, ["-c", "exit 0"])
        await wait_exit(terms, first)  # exited but not released: it still holds its output, so it counts
        await create(terms, SH, SLEEPER)
        with pytest.raises(RequestCancelled, match="too many terminals") as info:
            await create(terms, SH, SLEEPER)
        assert info.value.code == -32800
        assert info.value.data == {"limit": 2}
        await release(terms, first)
        await create(terms, SH, SLEEPER)


async def test_working_directory(project: Path, tmp_path: Path) -> None:
    extra, shared, outside = tmp_path / "extra", tmp_path / "shared", tmp_path / "outside"
    for place in (extra, shared, outside, project / "sub"):
        place.mkdir()
    (project / "door").symlink_to(outside, target_is_directory=True)

    async def pwd(**kw: object) -> str:
        tid = await create(terms, "/bin/pwd", **kw)
        await wait_exit(terms, tid)
        return (await output(terms, tid)).output.strip()

    async with LocalTerminals(roots=[shared]) as terms:
        terms.open_session("s1", str(project), [str(extra)])
        assert await pwd() == str(project)
        assert await pwd(cwd=str(project / "sub")) == str(project / "sub")
        assert await pwd(cwd=str(extra)) == os.path.realpath(extra)
        assert await pwd(cwd=str(shared)) == os.path.realpath(shared)
        for bad in (str(outside), str(project / "door"), f"{project}/../outside"):
            with pytest.raises(InvalidParams, match="outside the directories") as info:
                await pwd(cwd=bad)
            assert info.value.code == -32602
        with pytest.raises(InvalidParams, match="absolute"):
            await pwd(cwd="sub")
        with pytest.raises(ResourceNotFound, match="does not exist"):
            await pwd(cwd=str(project / "missing"))
        (project / "file").write_text("x")
        with pytest.raises(InvalidParams, match="not a directory"):
            await pwd(cwd=str(project / "file"))


async def test_bad_requests_get_clear_errors(project: Path, tmp_path: Path) -> None:
    (project / "plain.txt").write_text("not a program")
    async with LocalTerminals() as terms:
        terms.open_session("s1", str(project))
        terms.open_session("s2", str(project))
        cases: list[tuple[type[RpcError], str, dict[str, object]]] = [
            (ResourceNotFound, "unknown or closed session", {"command": SH, "session": "nobody"}),
            (ResourceNotFound, "command not found", {"command": "no-such-command-acp"}),
            (ResourceNotFound, "command not found", {"command": str(project / "missing")}),
            (InvalidParams, "not executable", {"command": str(project / "plain.txt")}),
            (InvalidParams, "must not be empty", {"command": ""}),
            (InvalidParams, "NUL", {"command": SH, "args": ["a\0b"]}),
            (InvalidParams, "environment variable", {"command": SH, "env": [v1.EnvVariable(name="A=B", value="x")]}),
            (InvalidParams, "environment variable", {"command": SH, "env": [v1.EnvVariable(name="", value="x")]}),
        ]
        for error, message, kw in cases:
            command = str(kw.pop("command"))
            with pytest.raises(error, match=message) as info:
                await create(terms, command, **kw)  # type: ignore[arg-type]
            assert_clean(info.value)
        tid = await create(terms, SH, SLEEPER)
        with pytest.raises(ResourceNotFound, match="unknown or released terminal"):
            await output(terms, tid, session="s2")  # another session's terminal is not even named
        with pytest.raises(ResourceNotFound):
            await kill(terms, "term_nope")
        assert terms.terminal_ids == (tid,)


async def test_a_provider_that_is_not_running_refuses_clearly(project: Path) -> None:
    terms = LocalTerminals()
    terms.open_session("s1", str(project))
    with pytest.raises(InternalError, match="not running") as info:
        await create(terms, SH, SLEEPER)
    assert info.value.code == -32603


def test_constructor_checks_its_limits() -> None:
    with pytest.raises(ValueError):
        LocalTerminals(max_terminals=0)
    with pytest.raises(ValueError):
        LocalTerminals(output_byte_limit=-1)
    with pytest.raises(ValueError):
        LocalTerminals(kill_grace=-1)


def running_with_argument(argument: str) -> list[int]:
    """Live processes whose command line holds ``argument`` (for commands whose pid the test never learns)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argument.encode() in argv and alive(int(entry)):
                found.append(int(entry))
    return found


@pytest.mark.parametrize("closing", ["session", "provider"])
async def test_closing_while_a_command_starts_leaves_nothing_behind(project: Path, closing: str) -> None:
    """A create still starting its process when the session (or the provider) closes stops that process itself."""
    duration = f"30.{int.from_bytes(os.urandom(4), 'big')}"  # a unique argument to find the process by
    outcome: list[object] = []

    async def creator() -> None:
        try:
            outcome.append(await create(terms, "sleep", [duration]))
        except RpcError as error:
            outcome.append(error)

    async with anyio.create_task_group() as tg, LocalTerminals() as terms:
        terms.open_session("s1", str(project))
        tg.start_soon(creator)
        await anyio.sleep(0)  # the creator is now inside the spawn
        if closing == "session":
            await terms.close_session("s1")
        # leaving the provider (at once, or after closing the session) while the command may still be starting
    assert running_with_argument(duration) == []
    assert len(outcome) == 1 and isinstance(outcome[0], (str, ResourceNotFound, RequestCancelled)), outcome
