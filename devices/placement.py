"""Will a model fit the device? Measure its peak memory once, then check it against the profile.

The runtime calls `measure_peak_memory` around loading a bundle and running it once, then
`check_placement`, so a model too large for the board stops at start-up with a message that
says what to change, instead of being killed by the OOM killer mid-session.
"""
from __future__ import annotations

import math
import re
import threading
from pathlib import Path
from typing import Callable, Literal

import psutil

from edgert.devices.heap import give_back
from edgert.devices.profile import DeviceProfile, load_profile, profiles

CLEAR_REFS = Path("/proc/self/clear_refs")
STATUS = Path("/proc/self/status")


class PlacementError(ValueError):
    """A model that does not fit the device profile's memory budget."""


def check_placement(peak_memory_mb: float, profile: DeviceProfile, what: str) -> None:
    """Raise PlacementError if `what` (a bundle, a model) needs more than the profile allows."""
    if not math.isfinite(peak_memory_mb) or peak_memory_mb < 0:
        raise ValueError(f"{what}: peak memory must be a finite number of MB >= 0, "
                         f"got {peak_memory_mb}")
    budget = profile.memory_budget_mb
    if peak_memory_mb <= budget:
        return
    raise PlacementError(
        f"{what} needs {peak_memory_mb:.0f} MB at peak, more than the {budget} MB "
        f"{_pool(profile)} that device profile {profile.name!r} allows for a model. To fit: "
        "run a smaller batch; export an int8 or fp16 variant (edgert export ... --int8 or "
        f"--fp16){_larger(peak_memory_mb, profile)}. If this device has more memory than the "
        "profile assumes, use a copy of the profile with a larger memory_budget_mb.")


def measure_peak_memory(fn: Callable[[], object], method: Literal["auto", "hwm", "sample"] = "auto",
                        interval: float = 0.001) -> float:
    """MB by which this process's resident memory (RSS) peaks above its level before `fn` runs.

    "hwm" (Linux, the default where it works): reset the kernel's RSS high-water mark
    (VmHWM, by writing 5 to /proc/self/clear_refs), run fn, read the mark. Exact: no spike
    is missed, however short. "sample": psutil reads RSS every `interval` s in a thread
    while fn runs, which can miss a spike shorter than the interval. tracemalloc is not used:
    it sees Python allocations only, not ONNX Runtime's or TensorRT's native arenas.
    RSS is host memory: a discrete GPU's memory and, on Jetson, CUDA allocations (nvmap)
    are not in it; `telemetry.Sampler` reports those.
    """
    give_back()  # freed memory the allocator kept would hide fn's allocations
    if method == "hwm" or (method == "auto" and _hwm_works()):
        return _peak_by_hwm(fn)
    return _peak_by_sampling(fn, interval)


def _pool(profile: DeviceProfile) -> str:
    if not profile.shared_memory:
        return "of GPU memory"
    gpu = "CUDAExecutionProvider" in profile.ort_providers
    return "of memory shared by CPU and GPU" if gpu else "of RAM"


def _larger(peak_mb: float, profile: DeviceProfile) -> str:
    """'; or use a larger device: NAME (N MB), ...' naming every profile it fits, smallest first."""
    fits = sorted((p for p in map(load_profile, profiles())
                   if p.memory_budget_mb >= peak_mb and p.name != profile.name),
                  key=lambda p: p.memory_budget_mb)
    if not fits:
        return "; no shipped device profile allows that much, so shrink the model"
    return "; or use a larger device: " + ", ".join(f"{p.name} ({p.memory_budget_mb} MB)"
                                                    for p in fits)


def _hwm_works() -> bool:
    try:
        CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return _vm("VmHWM") is not None


def _peak_by_hwm(fn: Callable[[], object]) -> float:
    CLEAR_REFS.write_text("5")  # VmHWM := current RSS
    before = _vm("VmRSS")
    fn()
    return max(0.0, (_vm("VmHWM") - before) / 1024)


def _vm(field: str) -> int | None:
    """A kB figure from /proc/self/status."""
    match = re.search(rf"^{field}:\s*(\d+) kB", STATUS.read_text(), re.M)
    return int(match[1]) if match else None


def _peak_by_sampling(fn: Callable[[], object], interval: float) -> float:
    process = psutil.Process()
    before = peak = process.memory_info().rss
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(interval):
            peak = max(peak, process.memory_info().rss)

    thread = threading.Thread(target=sample, name="peak-memory", daemon=True)
    thread.start()
    try:
        fn()
    finally:
        done.set()
        thread.join()
    peak = max(peak, process.memory_info().rss)
    return max(0.0, (peak - before) / 2**20)
