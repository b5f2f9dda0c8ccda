"""Peak RSS of the current process, shared by the benchmark clients (each runs in its own environment)."""

from __future__ import annotations

import resource


def peak_rss_kib() -> int:
    """This process's own peak RSS. ``ru_maxrss`` would carry over the forking parent's peak through exec on
    Linux, so the kernel's per-address-space high-water mark (VmHWM) is read where it exists."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
