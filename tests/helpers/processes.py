"""What tests ask of a process by pid (Linux ``/proc``)."""

from __future__ import annotations


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie (an orphan's zombie waits for pid 1, which may never collect it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")
