"""keep_heap: a freed block is reused by the next allocation, without page faults; and
peak-memory measurements still see allocations once the heap is kept."""
import subprocess
import sys

import pytest

from edgert.devices.heap import keep_heap
from edgert.devices.placement import measure_peak_memory

CYCLES = """
import resource, sys
import numpy as np
from edgert.devices.heap import keep_heap
kept = keep_heap() if sys.argv[1] == "keep" else None
for _ in range(3):
    np.ones(40 << 17)  # 40 MiB of float64: above glibc's largest mmap threshold
start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    np.ones(40 << 17)
print(kept, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start) / 20)
"""


def faults(mode: str) -> tuple[str, float]:
    out = subprocess.run([sys.executable, "-c", CYCLES, mode], capture_output=True, text=True,
                         check=True).stdout.split()
    return out[0], float(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_kept_heap_reuses_freed_memory_without_page_faults():
    kept, with_keep = faults("keep")
    _, plain = faults("plain")
    assert kept == "True"
    # without keep_heap each 40-MiB array faults its pages in again: 10240 4-KiB pages, or
    # 20 where the kernel backs it with 2-MiB huge pages
    assert plain >= 15
    assert with_keep < 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_peak_memory_is_measured_in_a_process_that_keeps_its_heap():
    keep_heap()
    for _ in range(2):
        block = bytearray(120 * 2**20)
        block[::4096] = b"\1" * len(block[::4096])
        del block  # kept by the allocator, still resident

    def load():
        again = bytearray(120 * 2**20)
        again[::4096] = b"\1" * len(again[::4096])

    assert 110 < measure_peak_memory(load, method="hwm") < 200
