"""Keep freed memory in the process, so that steady-state work does not page-fault; give it
back when memory is to be measured.

glibc hands large freed blocks back to the kernel (it unmaps blocks above its mmap threshold
and trims the top of the heap); the next array of that size then faults its pages in again,
one 4-KiB page at a time, each zeroed by the kernel. A pipeline that builds the same arrays
every window pays that every window: CogMoE's stage 1 took ~1000 page faults (4 MB) a window
and ran 1.3x slower for it. Turning trimming and mmap off is the usual set-up of a real-time
Linux process (the PREEMPT_RT "simple RT application" guide does the same): freed memory is
reused, and the resident size stays at its high-water mark instead of going up and down.
"""
from __future__ import annotations

import ctypes
import logging
import sys

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1  # glibc's malloc.h
M_MMAP_MAX = -4


def keep_heap() -> bool:
    """Ask the C library to keep freed memory (process-wide, for the rest of its life; see
    `give_back`). False where that cannot be done: not Linux, or a C library without glibc's
    `mallopt`."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        log.info("this C library has no mallopt: freed memory goes back to the kernel")
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(M_TRIM_THRESHOLD, -1)) and bool(mallopt(M_MMAP_MAX, 0))


def give_back() -> None:
    """Return the freed memory the C library holds to the kernel (glibc's malloc_trim), so
    that what is allocated next shows in the resident size: a measurement of peak memory in a
    process whose heap is kept would otherwise see the next model reuse memory already
    resident."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
