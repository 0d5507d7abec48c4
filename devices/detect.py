"""Which device profile applies here, and why: Jetson device tree, L4T release, nvidia-smi, CPU.

Every file is read under `root`, and tools are looked up on PATH under `root`, so a test can
build a board's files in a folder and detect it as the board would.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from edgert.devices import nvidia_smi
from edgert.devices.profile import load_profile

GPU_QUERY = "name,memory.total,compute_cap,driver_version"

JETSONS = [  # device-tree model pattern -> profile; first match wins
    (re.compile(r"orin nano", re.I), "jetson-orin-nano-8gb"),
    (re.compile(r"orin nx", re.I), "jetson-orin-nx-16gb"),
    (re.compile(r"agx orin", re.I), "jetson-agx-orin-64gb"),
    (re.compile(r"xavier nx", re.I), "jetson-xavier-nx"),
]
SMALLER_BOARD = 0.75  # visible memory under this share of the profile's: a smaller module
L4T = re.compile(r"#\s*R(\d+)\s*\(release\),\s*REVISION:\s*([\d.]+)")
POWER_MODEL = re.compile(r"^<\s*POWER_MODEL\s+ID=(\d+)\s+NAME=(\S+)\s*>", re.M)


@dataclass
class Gpu:
    name: str
    memory_total_mb: float | None
    compute_capability: str | None
    driver: str | None

    def describe(self) -> str:
        memory = ("memory unknown" if self.memory_total_mb is None
                  else f"{self.memory_total_mb:.0f} MB")
        return (f"{self.name} ({memory}, compute {self.compute_capability or 'unknown'}, "
                f"driver {self.driver or 'unknown'})")


@dataclass
class Detection:
    """What was found and the profile chosen; `reasons` say why, `warnings` what to check."""

    profile: str
    reasons: list[str]
    warnings: list[str] = field(default_factory=list)
    jetson_model: str | None = None
    l4t: str | None = None
    power_modes: list[dict] = field(default_factory=list)
    power_mode: int | None = None
    gpus: list[Gpu] = field(default_factory=list)
    cpu_model: str | None = None
    cpu_cores: int = 0
    memory_total_mb: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def detect(root: Path = Path("/")) -> Detection:
    """Read the machine under `root` and choose its profile."""
    root = Path(root)
    model = _read(root / "proc/device-tree/model")
    release = _read(root / "etc/nv_tegra_release")
    tegra = release is not None
    gpus, smi_note = ([], None) if is_jetson(model, tegra) else query_gpus(root)
    profile, reasons = choose_profile(model, tegra, gpus)
    if smi_note:
        reasons.append(smi_note)
    found = Detection(profile=profile, reasons=reasons, jetson_model=model,
                      l4t=parse_l4t(release) if release else None,
                      power_modes=_power_modes(root), power_mode=_power_mode(root),
                      gpus=gpus, cpu_model=_cpu_model(root), cpu_cores=_cpu_cores(root),
                      memory_total_mb=_memory_mb(root))
    found.warnings = _warnings(found)
    return found


def is_jetson(model: str | None, tegra: bool) -> bool:
    """A Jetson names itself in the device tree; an L4T install (nv_tegra_release) is one too."""
    return tegra or (model is not None and "jetson" in model.lower())


def choose_profile(model: str | None, tegra: bool, gpus: list[Gpu]) -> tuple[str, list[str]]:
    """The profile for a device-tree model string, an L4T install and the dGPUs found."""
    if is_jetson(model, tegra):
        for pattern, profile in JETSONS:
            if model and pattern.search(model):
                return profile, [f"device-tree model {model!r} matches {pattern.pattern!r}"]
        return "cpu", [f"Jetson ({model or 'model unknown'}) with no matching profile; using "
                       "cpu. Add devices/profiles/<board>.yaml and a pattern in devices/detect.py"]
    if gpus:
        return "desktop-cuda", [f"nvidia-smi reports {g.describe()}" for g in gpus]
    return "cpu", ["no Jetson device tree and no NVIDIA GPU"]


def parse_gpus(text: str) -> list[Gpu]:
    """GPUs from `nvidia-smi --query-gpu=name,memory.total,compute_cap,driver_version
    --format=csv,noheader,nounits`, one line per GPU."""
    return [Gpu(name=name or "unknown", memory_total_mb=nvidia_smi.number(memory),
                compute_capability=cap, driver=driver)
            for name, memory, cap, driver in nvidia_smi.rows(text, 4)]


def query_gpus(root: Path = Path("/")) -> tuple[list[Gpu], str | None]:
    """Run nvidia-smi if it is on PATH under `root`; a note says why no GPU was found."""
    binary = which("nvidia-smi", root)
    if binary is None:
        return [], "nvidia-smi not on PATH: no NVIDIA driver for a discrete GPU"
    try:
        done = subprocess.run([binary, f"--query-gpu={GPU_QUERY}", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired) as err:
        return [], f"{binary} failed: {err}"
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip().splitlines()
        return [], f"{binary} exited {done.returncode}: {message[0] if message else 'no output'}"
    try:
        return parse_gpus(done.stdout), None
    except ValueError as err:
        return [], f"{binary}: {err}"


def parse_l4t(text: str) -> str | None:
    """'35.4.1' from nv_tegra_release's first line '# R35 (release), REVISION: 4.1, ...'."""
    match = L4T.search(text)
    return f"{match[1]}.{match[2]}" if match else None


def which(tool: str, root: Path = Path("/")) -> str | None:
    """A tool on PATH, with every PATH entry taken under `root`."""
    path = os.environ.get("PATH", os.defpath)
    if Path(root) != Path("/"):
        path = os.pathsep.join(str(Path(root) / d.lstrip("/")) for d in path.split(os.pathsep))
    return shutil.which(tool, path=path)


def _read(path: Path) -> str | None:
    """A text file, without the NUL that ends device-tree strings; None if absent."""
    try:
        return path.read_bytes().decode(errors="replace").rstrip("\0\n ").strip() or None
    except OSError:
        return None


def _power_modes(root: Path) -> list[dict]:
    """The nvpmodel modes this board defines, from /etc/nvpmodel.conf."""
    text = _read(root / "etc/nvpmodel.conf") or ""
    return [{"id": int(i), "name": name} for i, name in POWER_MODEL.findall(text)]


def _power_mode(root: Path) -> int | None:
    """The current nvpmodel mode, from its status file ('pmode:0002 fmode:quiet')."""
    match = re.search(r"pmode:\s*(\d+)", _read(root / "var/lib/nvpmodel/status") or "")
    return int(match[1]) if match else None


def _cpu_model(root: Path) -> str | None:
    text = _read(root / "proc/cpuinfo") or ""
    match = re.search(r"^(?:model name|Hardware|Processor)\s*:\s*(.+)$", text, re.M)
    return match[1].strip() if match else None


def _cpu_cores(root: Path) -> int:
    if root == Path("/"):
        return psutil.cpu_count(logical=True) or 0
    return len(re.findall(r"^processor\s*:", _read(root / "proc/cpuinfo") or "", re.M))


def _memory_mb(root: Path) -> float | None:
    if root == Path("/"):
        return round(psutil.virtual_memory().total / 2**20, 1)
    match = re.search(r"^MemTotal:\s*(\d+) kB", _read(root / "proc/meminfo") or "", re.M)
    return round(int(match[1]) / 1024, 1) if match else None


def _warnings(found: Detection) -> list[str]:
    """Where the board differs from what its profile assumes."""
    profile = load_profile(found.profile)
    warnings = []
    total, nominal = found.memory_total_mb, profile.memory_total_mb
    if total and nominal and total < SMALLER_BOARD * nominal:
        warnings.append(f"this board has {total:.0f} MB but profile {profile.name!r} assumes "
                        f"{nominal} MB (a smaller module?): lower memory_budget_mb "
                        f"({profile.memory_budget_mb}) in a copy of the profile")
    small = [g for g in found.gpus if not profile.shared_memory and g.memory_total_mb is not None
             and g.memory_total_mb < profile.memory_budget_mb]
    warnings += [f"{g.describe()} has less memory than the {profile.memory_budget_mb} MB budget "
                 f"of {profile.name!r}: lower memory_budget_mb in a copy" for g in small]
    return warnings
