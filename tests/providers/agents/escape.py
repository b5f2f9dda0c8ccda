"""Start a process that tries to outlive whoever started it, the ways real programs detach.

argv: TECHNIQUE PIDFILE. The escaped process (a sleeper) appends its pid to PIDFILE and sleeps forever, with
stdin, stdout and stderr on /dev/null; this process returns once the pid is written. TECHNIQUES:

- ``setsid``: a child that calls setsid() (a new session and process group);
- ``setpgid``: a child that calls setpgid(0, 0) (a new process group, same session);
- ``daemon``: the classic double fork (fork, setsid, fork, the middle one exits): the sleeper is an orphan;
- ``nohup``: ``nohup SLEEPER &`` from sh (ignores SIGHUP, stays in the group);
- ``disown``: ``SLEEPER & disown`` from bash;
- ``stubborn``: setsid, and SIGTERM, SIGHUP and SIGINT ignored (only SIGKILL ends it);
- ``setsid-command``: util-linux ``setsid -f SLEEPER``.
"""

import os
import shlex
import signal
import subprocess
import sys
import time

TECHNIQUES = ("setsid", "setpgid", "daemon", "nohup", "disown", "stubborn", "setsid-command")


def sleeper(pidfile, stubborn=False):
    if stubborn:
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(signum, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    with open(pidfile, "a") as file:
        file.write(f"{os.getpid()}\n")
    while True:
        time.sleep(60)


def lines(pidfile):
    try:
        with open(pidfile) as file:
            return len(file.read().splitlines())
    except FileNotFoundError:
        return 0


def forked(pidfile, before, stubborn=False):
    """Fork a sleeper that first runs ``before()``."""
    if os.fork() == 0:
        before()
        sleeper(pidfile, stubborn)


def main():
    technique, pidfile = sys.argv[1], sys.argv[2]
    if technique == "--sleep":
        sleeper(pidfile)
    seen = lines(pidfile)
    me = f"{shlex.quote(sys.executable)} {shlex.quote(os.path.abspath(__file__))} --sleep {shlex.quote(pidfile)}"
    if technique == "setsid":
        forked(pidfile, os.setsid)
    elif technique == "setpgid":
        forked(pidfile, lambda: os.setpgid(0, 0))
    elif technique == "stubborn":
        forked(pidfile, os.setsid, stubborn=True)
    elif technique == "daemon":
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                sleeper(pidfile)
            os._exit(0)
    elif technique == "nohup":
        subprocess.run(["sh", "-c", f"nohup {me} >/dev/null 2>&1 &"], check=True)
    elif technique == "disown":
        subprocess.run(["bash", "-c", f"{me} >/dev/null 2>&1 & disown"], check=True)
    elif technique == "setsid-command":
        subprocess.run(["sh", "-c", f"setsid -f {me} >/dev/null 2>&1"], check=True)
    else:
        raise SystemExit(f"unknown technique {technique!r}")
    deadline = time.monotonic() + 10
    while lines(pidfile) <= seen and time.monotonic() < deadline:
        time.sleep(0.005)
    os._exit(0)  # never run a forked child's cleanup twice


main()
