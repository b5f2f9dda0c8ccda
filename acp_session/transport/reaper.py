"""The reaper: a tiny supervisor that runs one command and ends every process the command ever starts.

A process that calls ``setsid`` or ``setpgid``, or daemonizes with a double fork, leaves the process group a
client can signal; its parent may exit, and the orphan is then adopted by pid 1, out of anyone's reach. On
Linux this program marks itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``), so every orphan among
its descendants is adopted by it instead: whatever a descendant does to detach, it stays below the reaper,
which can find it (``/proc``) and end it.

It is run by ``acp_session.transport.process_tree`` as ``python -I -S reaper.py FD GRACE [RECORD] -- ARGV...``: no
``site``, no acp_session import, only the standard library, so it costs one small interpreter start-up (tens
of milliseconds) before ARGV runs. It runs ARGV with its own stdin, stdout, stderr, environment (as it was
given, before Python changed anything) and working directory, in a new process group of its own and with a
parent-death signal (SIGKILL: if the reaper is killed outright, the command dies too), then puts /dev/null on
its own standard streams (so the command's end of output is seen when the command and its children close
theirs). FD is a socket to the client:

- it reports ``started PID`` (or ``failed ERRNO`` if ARGV cannot be started, then exits) and ``exited STATUS``
  (the command's wait status) when the command itself exits;
- the client sends ``T`` (SIGTERM, then SIGCONT, to every descendant) and ``K`` (SIGKILL to every descendant,
  again until none is left);
- end of file (the client closed it, or the client died, and the kernel closed it) means: SIGTERM to every
  descendant, GRACE seconds for them to end, then SIGKILL. (A socket rather than a parent-death signal on the
  reaper: that one fires when the *thread* that forked it ends, and trio spawns from short-lived threads.)

RECORD, when given, is a file (a memfd) in which it keeps the processes below it, a ``pid starttime`` line
each, rewritten every ``RECORD_INTERVAL`` seconds when the tree changed and emptied when it exits normally: if
it is killed outright, its orphans go to pid 1, and the client reads the record to end them
(``acp_session.transport.orphans``).

It exits once the command has exited and no descendant is left, with the command's exit code (128 + the
signal number for a command killed by a signal). SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent
to the reaper itself are passed on to the command. Elsewhere than Linux it is never used.
"""

from __future__ import annotations

import os
import select
import sys
import time

TYPE_CHECKING = False  # typing is not imported: every import costs start-up time here (mypy reads this as True)
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable
else:
    import _signal as signal  # the C module without its enum wrappers (3-4 ms less)

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
FORWARDED = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
KILL_ROUNDS_SECONDS = 5.0  # how long K keeps looking for descendants forked while it was killing
RECORD_INTERVAL = 0.2  # how often the tree is looked at for the record


def load_prctl() -> Callable[..., int] | None:
    """libc's ``prctl`` (None where it cannot be had: then this is a process-group supervisor only)."""
    try:
        import ctypes

        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
        return prctl
    except (OSError, AttributeError):
        return None


def initial_environment() -> dict[bytes, bytes]:
    """The environment this process was started with: Python may have added to ``os.environ`` since (its C
    locale coercion sets LC_CTYPE), and the command must get exactly what the client passed."""
    try:
        with open("/proc/self/environ", "rb") as file:
            block = file.read()
    except OSError:
        return dict(os.environb)
    env: dict[bytes, bytes] = {}
    for entry in block.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and name:
            env.setdefault(name, value)
    return env


def descendants(root: int) -> list[int]:
    """The living (not zombie) processes below ``root``, found through every process's parent in /proc."""
    children: dict[int, list[int]] = {}
    living: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as file:
                stat = file.read()
        except OSError:
            continue  # exited meanwhile
        fields = stat[stat.rfind(b")") + 2 :].split()  # state, ppid, ...: the name may hold spaces
        pid = int(entry)
        children.setdefault(int(fields[1]), []).append(pid)
        if fields[0] not in (b"Z", b"X"):
            living.add(pid)
    found: list[int] = []
    stack = list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        if pid in living:
            found.append(pid)
        stack.extend(children.get(pid, ()))
    return found


def start_time(pid: int) -> bytes | None:
    """``pid``'s start time (``/proc/PID/stat`` field 22), None for a process gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    return fields[19] if len(fields) > 19 and fields[0] not in (b"Z", b"X") else None


def children(pid: int) -> list[int] | None:
    """``pid``'s children from ``/proc/PID/task/TID/children`` (each thread's own), None where the kernel has
    no such files; a tree costs a few small reads, not a scan of every process."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as file:
                found.extend(int(child) for child in file.read().split())
        except FileNotFoundError:
            if pid == os.getpid():
                return None  # not this kernel's (CONFIG_PROC_CHILDREN)
        except OSError:
            pass
    return found


def tree_record() -> bytes:
    """A ``pid starttime`` line for each living process below this one."""
    pids = children(os.getpid())
    if pids is None:
        pids = descendants(os.getpid())
    else:
        stack, pids = pids, []
        while stack:
            pid = stack.pop()
            pids.append(pid)
            stack.extend(children(pid) or ())
    lines = []
    for pid in sorted(pids):
        start = start_time(pid)
        if start is not None:
            lines.append(b"%d %s\n" % (pid, start))
    return b"".join(lines)


def signal_all(signum: int) -> int:
    """Send ``signum`` to every living descendant; how many there were."""
    found = descendants(os.getpid())
    for pid in found:
        try:  # noqa: SIM105 - contextlib would cost start-up time (as everywhere in this file)
            os.kill(pid, signum)
        except OSError:
            pass  # gone meanwhile, or not ours to signal (a set-user-id program)
    return len(found)


class Reaper:
    def __init__(
        self, control: int, grace: float, argv: list[str], prctl: Callable[..., int] | None, record: int = -1
    ) -> None:
        self.control = control
        self.record = record  # the client's file of the processes below us (-1: none)
        self.recorded = b""
        self.next_record = 0.0
        self.prctl = prctl
        self.grace = grace
        self.argv = argv
        self.child = 0
        self.status: int | None = None  # the command's wait status, once it exited
        self.deadline: float | None = None  # end of the grace period after end of file
        self.closed = False

    def report(self, line: str) -> None:
        try:  # noqa: SIM105
            os.write(self.control, line.encode() + b"\n")
        except OSError:
            pass  # the client is gone: nobody to tell

    def start(self) -> bool:
        """Run the command in a new process group; False (reported) if it cannot be started."""
        env = initial_environment()
        me = os.getpid()
        failure_read, failure_write = os.pipe()  # closed on exec: end of file means the command runs
        pid = os.fork()
        if pid == 0:  # the command-to-be: nothing here may return or raise
            try:
                signal.set_wakeup_fd(-1)
                os.setpgid(0, 0)
                if self.prctl is not None:  # if the reaper is killed outright, the command goes with it
                    self.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                    if os.getppid() != me:
                        os._exit(127)
                for signum in (signal.SIGPIPE, signal.SIGXFSZ):  # ignored by Python, not by the command
                    signal.signal(signum, signal.SIG_DFL)
                os.execvpe(self.argv[0], self.argv, env)  # PATH from env, as subprocess looks it up
            except OSError as exc:
                os.write(failure_write, str(exc.errno or 0).encode())
            finally:
                os._exit(127)
        os.close(failure_write)
        try:  # noqa: SIM105
            os.setpgid(pid, pid)  # also here, so no signal to the group can come before the child's own call
        except OSError:
            pass  # it has exec'd already (then it did it itself)
        failure = b""
        while chunk := os.read(failure_read, 64):
            failure += chunk
        os.close(failure_read)
        if failure:
            os.waitpid(pid, 0)
            self.report(f"failed {int(failure)}")
            return False
        self.child = pid
        self.report(f"started {pid}")
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
        return True

    def reap(self) -> bool:
        """Collect every exited child; True while any child (so any descendant) is left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.child and self.status is None:
                self.status = status
                self.report(f"exited {status}")

    def keep_record(self, content: bytes | None = None) -> None:
        """Rewrite the record if the tree changed (``content``: what to write instead of the tree)."""
        if self.record < 0:
            return
        data = tree_record() if content is None else content
        self.next_record = time.monotonic() + RECORD_INTERVAL
        if data != self.recorded:
            try:
                os.pwrite(self.record, data, 0)  # the new set first: killed in between, the client sees a superset
                os.ftruncate(self.record, len(data))
                self.recorded = data
            except OSError:
                pass

    def kill_everything(self) -> None:
        """SIGKILL every descendant until none is left (one forking meanwhile is caught by the next round)."""
        end = time.monotonic() + KILL_ROUNDS_SECONDS
        while signal_all(signal.SIGKILL) and time.monotonic() < end:
            self.reap()
            time.sleep(0.005)

    def on_command(self, data: bytes) -> None:
        if not data:  # end of file: the client is done with us, or dead
            self.closed = True
            signal_all(signal.SIGTERM)
            signal_all(signal.SIGCONT)
            self.deadline = time.monotonic() + self.grace
            return
        for command in data:
            if command == ord("T"):
                signal_all(signal.SIGTERM)
                signal_all(signal.SIGCONT)  # a stopped process must run to act on SIGTERM
            elif command == ord("K"):
                self.kill_everything()

    def run(self) -> int:
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        os.set_blocking(wake_read, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # the wake-up byte is what counts
        for name in FORWARDED:
            signum = getattr(signal, name)
            if signal.getsignal(signum) != signal.SIG_IGN:  # an ignored signal stays ignored for the command
                signal.signal(signum, lambda signum, frame: None)
        if not self.start():
            return 127
        while True:
            if not self.reap() and self.status is not None:
                break  # the command exited and nothing it started is left
            now = time.monotonic()
            if self.record >= 0 and now >= self.next_record:
                self.keep_record()
            timeout = None if self.record < 0 else max(0.0, self.next_record - now)
            if self.deadline is not None:
                left = self.deadline - now
                if left <= 0:
                    self.kill_everything()
                    self.deadline = None
                    continue
                timeout = left if timeout is None else min(timeout, left)
            watched = [wake_read] if self.closed else [wake_read, self.control]
            ready, _, _ = select.select(watched, [], [], timeout)
            if wake_read in ready:
                for signum in os.read(wake_read, 64):
                    if signum != signal.SIGCHLD and self.status is None:
                        try:  # noqa: SIM105
                            os.kill(self.child, signum)  # passed on to the command
                        except OSError:
                            pass
            if self.control in ready:
                try:
                    data = os.read(self.control, 64)
                except OSError:
                    data = b""
                self.on_command(data)
        self.keep_record(b"")  # nothing is left below us
        status = self.status or 0
        return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def main(args: list[str]) -> int:
    record = -1
    if len(args) >= 5 and args[3] == "--":
        record, args = int(args[2]), [*args[:2], *args[3:]]
    if len(args) < 4 or args[2] != "--":
        sys.stderr.write("usage: reaper.py CONTROL_FD GRACE [RECORD_FD] -- ARGV...\n")
        return 2
    control, grace, argv = int(args[0]), float(args[1]), args[3:]
    os.set_inheritable(control, False)  # the command must not hold the client's socket
    if record >= 0:
        os.set_inheritable(record, False)  # nor its record
    prctl = load_prctl()
    if prctl is not None:
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # adopt every orphan below us (Linux 3.4 and later)
    return Reaper(control, grace, argv, prctl, record).run()


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))  # no interpreter teardown: the client waits for this exit to end the tree
