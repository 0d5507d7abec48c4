"""What a device is doing while a model runs: a process's CPU and memory, the GPU, power, heat.

Jetsons report through `tegrastats` (one line per interval), desktop GPUs through
`nvidia-smi`; both are parsed here from their text, and `Sampler` runs whichever exists
beside psutil's view of one process.
"""
from __future__ import annotations

import re
import subprocess
import threading
import time
from statistics import fmean

import psutil

from edgert.devices import nvidia_smi
from edgert.devices.detect import which

USAGE_QUERY = "utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu"
OFFLINE_SENSOR = -256.0  # tegrastats prints -256C for a sensor that is switched off
BOARD_RAILS = ("VDD_IN", "POM_5V_IN")  # board input: where printed, the rest are parts of it

RAM = re.compile(r"\bRAM (\d+)/(\d+)MB")
SWAP = re.compile(r"\bSWAP (\d+)/(\d+)MB")
CPUS = re.compile(r"\bCPU \[([^\]]*)\]")
CORE = re.compile(r"(\d+)%(?:@(\d+))?")
EMC = re.compile(r"\bEMC_FREQ (\d+)%(?:@(\d+))?")
GR3D = re.compile(r"\bGR3D_FREQ (\d+)%(?:@\[?([\d,]+)\]?)?")
TEMP = re.compile(r"\b([A-Za-z]\w*)@(-?[\d.]+)C\b")
RAIL = re.compile(r"\b([A-Z][A-Z0-9_]*)\s+(\d+)(?:mW)?/(\d+)(?:mW)?(?=\s|$)")


def parse_tegrastats(line: str) -> dict:
    """One tegrastats line (JetPack 4 to 6, Nano to AGX Orin) as numbers.

    Keys: ram_used_mb, ram_total_mb, swap_used_mb, swap_total_mb, cpu_pct and cpu_mhz (one
    per core, None for a core that is off), emc_pct, emc_mhz, gpu_pct, gpu_mhz, temps_c
    {sensor: C}, rails_mw {rail: {now, avg}} and power_mw (VDD_IN or POM_5V_IN, the board
    input, where there is one; else the sum of the rails, as on AGX Orin). Fields a board
    does not print are absent.
    """
    ram = RAM.search(line)
    if ram is None:
        raise ValueError(f"not a tegrastats line (no 'RAM used/totalMB'): {line[:120]!r}")
    out: dict = {"ram_used_mb": int(ram[1]), "ram_total_mb": int(ram[2])}
    if swap := SWAP.search(line):
        out["swap_used_mb"], out["swap_total_mb"] = int(swap[1]), int(swap[2])
    if cpus := CPUS.search(line):
        cores = [CORE.fullmatch(c.strip()) for c in cpus[1].split(",")]
        out["cpu_pct"] = [int(c[1]) if c else None for c in cores]
        out["cpu_mhz"] = [int(c[2]) if c and c[2] else None for c in cores]
    if emc := EMC.search(line):
        out["emc_pct"], out["emc_mhz"] = _load_and_clock(emc)
    if gr3d := GR3D.search(line):
        out["gpu_pct"], out["gpu_mhz"] = _load_and_clock(gr3d)
    out["temps_c"] = {name.lower(): float(c) for name, c in TEMP.findall(line)
                      if float(c) > OFFLINE_SENSOR}
    out["rails_mw"] = {name: {"now": int(now), "avg": int(avg)}
                       for name, now, avg in RAIL.findall(line)}
    if out["rails_mw"]:
        out["power_mw"] = _board_power(out["rails_mw"])
    return {k: v for k, v in out.items() if v is not None}


def parse_nvidia_smi(text: str) -> list[dict]:
    """Lines of `nvidia-smi --query-gpu=utilization.gpu,memory.used,memory.total,power.draw,
    temperature.gpu --format=csv,noheader,nounits`, one dict per line; [N/A] fields are None."""
    keys = ("gpu_pct", "memory_used_mb", "memory_total_mb", "power_w", "temperature_c")
    return [dict(zip(keys, map(nvidia_smi.number, row))) for row in nvidia_smi.rows(text, 5)]


def summarize_tegrastats(records: list[dict]) -> dict:
    """GPU load, system RAM (CPU and GPU share it), board power and the hottest sensor."""
    out = {"source": "tegrastats", "samples": len(records)}
    out.update(_mean_max("gpu_pct", [r.get("gpu_pct") for r in records]))
    out.update(_peak("ram_used_peak_mb", [r.get("ram_used_mb") for r in records]))
    out.update(_mean_max("power_w", [r["power_mw"] / 1000 if "power_mw" in r else None
                                     for r in records]))
    out.update(_peak("temperature_c_max", [max(r["temps_c"].values(), default=None)
                                           for r in records]))
    return out


def summarize_nvidia_smi(records: list[dict]) -> dict:
    """GPU load, GPU memory, board power and temperature of one GPU over time."""
    out = {"source": "nvidia-smi", "samples": len(records)}
    out.update(_mean_max("gpu_pct", [r["gpu_pct"] for r in records]))
    out.update(_peak("gpu_memory_used_peak_mb", [r["memory_used_mb"] for r in records]))
    out.update(_peak("gpu_memory_total_mb", [r["memory_total_mb"] for r in records]))
    out.update(_mean_max("power_w", [r["power_w"] for r in records]))
    out.update(_peak("temperature_c_max", [r["temperature_c"] for r in records]))
    return out


class Sampler:
    """Samples one process's CPU % and RSS every `interval` seconds in a thread, and runs
    tegrastats or nvidia-smi (GPU `gpu`, nvidia-smi's index) beside it when they exist.

    CPU % is psutil's: 100 is one core busy, so a process using two cores reads 200.
    """

    def __init__(self, pid: int | None = None, interval: float = 0.5, gpu: int = 0,
                 tools: bool = True):
        self.process = psutil.Process(pid)
        self.interval = interval
        self.gpu = gpu
        self.tools = tools
        self.samples: list[dict] = []  # {"t": s since start, "cpu_pct", "rss_mb"}
        self.gpu_samples: list[dict] = []
        self.gpu_source: str | None = None
        self.bad_lines = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._tool: subprocess.Popen | None = None
        self._t0 = 0.0

    def start(self) -> "Sampler":
        self._t0 = time.monotonic()
        self.process.cpu_percent(None)  # psutil measures from the previous call: set it now
        self._spawn(self._sample_loop)
        if self.tools:
            self._start_tool()
        return self

    def stop(self) -> dict:
        """Stop sampling (one last sample first) and return the summary."""
        if not self._stop.is_set():
            self._stop.set()
            if self._tool is not None:
                self._tool.terminate()
            for thread in self._threads:
                thread.join(timeout=5)
            if self._tool is not None:
                self._tool.wait(timeout=5)
            self._sample()
        return self.summary()

    def summary(self) -> dict:
        """mean/max CPU %, peak RSS MB, duration; `gpu` when tegrastats or nvidia-smi ran."""
        out = {"samples": len(self.samples),
               "duration_s": round(self.samples[-1]["t"], 3) if self.samples else 0.0}
        out.update(_mean_max("cpu_pct", [s["cpu_pct"] for s in self.samples]))
        out.update(_peak("rss_peak_mb", [s["rss_mb"] for s in self.samples]))
        if self.gpu_source == "tegrastats":
            out["gpu"] = summarize_tegrastats(self.gpu_samples)
        elif self.gpu_source == "nvidia-smi":
            out["gpu"] = summarize_nvidia_smi(self.gpu_samples)
        return out

    def __enter__(self) -> "Sampler":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _spawn(self, target) -> None:
        thread = threading.Thread(target=target, name=f"sampler-{target.__name__}", daemon=True)
        thread.start()
        self._threads.append(thread)

    def _sample_loop(self) -> None:
        while not self._stop.wait(self.interval):
            if not self._sample():
                return

    def _sample(self) -> bool:
        """One sample; False once the process is gone."""
        try:
            with self.process.oneshot():
                cpu, rss = self.process.cpu_percent(None), self.process.memory_info().rss
        except psutil.Error:
            return False
        self.samples.append({"t": time.monotonic() - self._t0, "cpu_pct": cpu,
                             "rss_mb": rss / 2**20})
        return True

    def _start_tool(self) -> None:
        ms = max(1, round(self.interval * 1000))
        if tegrastats := which("tegrastats"):
            command, self.gpu_source = [tegrastats, "--interval", str(ms)], "tegrastats"
        elif smi := which("nvidia-smi"):
            command = [smi, f"--id={self.gpu}", f"--query-gpu={USAGE_QUERY}",
                       "--format=csv,noheader,nounits", f"-lms={ms}"]
            self.gpu_source = "nvidia-smi"
        else:
            return
        self._tool = subprocess.Popen(command, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True)
        self._spawn(self._read_tool)

    def _read_tool(self) -> None:
        parse = parse_tegrastats if self.gpu_source == "tegrastats" else self._parse_smi_line
        for line in self._tool.stdout:
            try:
                self.gpu_samples.append(parse(line))
            except ValueError:
                self.bad_lines += 1

    @staticmethod
    def _parse_smi_line(line: str) -> dict:
        records = parse_nvidia_smi(line)
        if not records:
            raise ValueError("empty nvidia-smi line")
        return records[0]


def _load_and_clock(match: re.Match) -> tuple[int, int | None]:
    """'61%@2133', '0%@[305,305]' (one clock per GPC, all alike), or '0%' with no clock."""
    clocks = [int(c) for c in (match[2] or "").split(",") if c]
    return int(match[1]), max(clocks) if clocks else None


def _board_power(rails: dict) -> int:
    for name in BOARD_RAILS:
        if name in rails:
            return rails[name]["now"]
    return sum(rail["now"] for rail in rails.values())


def _mean_max(name: str, values: list) -> dict:
    values = [v for v in values if v is not None]
    if not values:
        return {}
    return {f"{name}_mean": round(fmean(values), 2), f"{name}_max": round(max(values), 2)}


def _peak(name: str, values: list) -> dict:
    values = [v for v in values if v is not None]
    return {name: round(max(values), 2)} if values else {}
