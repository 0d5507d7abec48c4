"""keep_heap: a freed block is reused by the next allocation, without page faults."""
import subprocess
import sys

import pytest

CYCLES = """
import resource, sys
import numpy as np
from runtime.heap import keep_heap
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
    assert plain > 100, "without keep_heap each 40-MiB array faults its pages in again"
    assert with_keep < 1
