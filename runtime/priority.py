"""Scheduling priority for a pipeline's threads.

On a machine the pipeline shares (sensor drivers, a recorder, a UI), the OS lets any of them
run before a pipeline thread that has just woken up. With the car pipeline's sources replayed
from another process on 2 cores, stage 1 took p99 20 ms at the default priority and 14.5-16.5
ms at nice -10, and the EEG inlet's p99 fell from 28 ms to 3-5 ms. Linux keeps the nice value
per thread, and a new thread takes its creator's: the pipeline's threads, and the liblsl
threads its nodes open, are made while the starting thread holds the value, and the starting
thread gets its own back afterwards.
"""
from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)


@contextmanager
def threads_at(nice: int | None, what: str) -> Iterator[int]:
    """Threads created inside the block run at `nice` (-20 highest, 19 lowest; None: the
    caller's); yields the value they get. Without the right to raise priority, they keep the
    caller's, and the warning says how to grant it."""
    before = os.getpriority(os.PRIO_PROCESS, 0)
    if nice is None or nice == before or not sys.platform.startswith("linux"):
        if nice not in (None, before):
            log.warning("%s: priority %d is applied on Linux only (nice is per thread there)",
                        what, nice)
        yield before
        return
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    except PermissionError:
        log.warning("%s: priority %d needs the right to raise priority: run as root, give "
                    "Python CAP_SYS_NICE (sudo setcap cap_sys_nice+ep %s), or allow it in "
                    "/etc/security/limits.conf (rtprio/nice); running at %d", what, nice,
                    os.path.realpath(sys.executable), before)
    try:
        yield os.getpriority(os.PRIO_PROCESS, 0)
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, before)
