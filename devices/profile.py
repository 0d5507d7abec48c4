"""Device profiles: what a board can hold and how to run a model on it, one YAML file each.

The runtime reads a profile to pick the backend order, the ONNX Runtime execution providers,
the precision to prefer and the memory a model may take; export may read one to know which
variants to build. Profiles live in `devices/profiles/NAME.yaml`.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

PROFILES = Path(__file__).parent / "profiles"

Precision = Literal["int8", "fp16", "fp32"]
Backend = Literal["trt", "ort", "torch"]


class ProfileError(ValueError):
    """A profile that does not exist or does not validate; the message names the file."""


class PowerMode(BaseModel):
    """One nvpmodel mode: `sudo nvpmodel -m ID` selects it."""

    model_config = ConfigDict(extra="forbid")

    id: int = Field(ge=0)
    name: str
    watts: float | None = Field(description="power budget; None: no budget (MAXN caps clocks only)")


class DeviceProfile(BaseModel):
    """A device class: memory budget, precision and backend preferences, accelerators, power."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    memory_total_mb: int | None = Field(None, gt=0, description="nominal memory of the board")
    shared_memory: bool = Field(description="the budget comes out of the RAM the OS and pipeline "
                                "use (Jetson, CPU-only); false: a discrete GPU's own memory")
    memory_budget_mb: int = Field(gt=0, description="what one model may take at peak")
    precisions: list[Precision] = Field(min_length=1, description="most preferred first")
    ort_providers: list[str] = Field(min_length=1, description="ONNX Runtime order")
    backends: list[Backend] = Field(min_length=1, description="most preferred first")
    dla_cores: int = Field(0, ge=0)
    compute_capability: str | None = Field(None, pattern=r"^\d+\.\d+$")
    cpu_threads: int | None = Field(None, ge=1, description="None: all usable cores but one")
    power_modes: list[PowerMode] = []
    super_power_modes: list[PowerMode] = Field([], description="JetPack 6.2+ super table")
    power_modes_source: str | None = None

    @field_validator("precisions", "ort_providers", "backends")
    @classmethod
    def _unique(cls, value: list) -> list:
        if len(set(value)) != len(value):
            raise ValueError(f"lists an entry twice: {value}")
        return value

    @field_validator("ort_providers")
    @classmethod
    def _cpu_last(cls, value: list[str]) -> list[str]:
        if value[-1] != "CPUExecutionProvider":
            raise ValueError("must end with CPUExecutionProvider, the fallback for every op")
        return value

    @field_validator("power_modes", "super_power_modes")
    @classmethod
    def _unique_ids(cls, value: list[PowerMode]) -> list[PowerMode]:
        ids = [mode.id for mode in value]
        if len(set(ids)) != len(ids):
            raise ValueError(f"power mode ids repeat: {ids}")
        return value

    @model_validator(mode="after")
    def _budget_fits(self) -> "DeviceProfile":
        if self.memory_total_mb is not None and self.memory_budget_mb > self.memory_total_mb:
            raise ValueError(f"memory_budget_mb ({self.memory_budget_mb}) is more than "
                             f"memory_total_mb ({self.memory_total_mb})")
        return self

    def threads(self) -> int:
        """CPU threads for inference, never more than the cores this process may use.

        Jetson power modes take cores offline, and containers pin CPUs: the affinity mask
        shows both, where the core count does not.
        """
        usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
        wanted = self.cpu_threads or usable - 1
        return max(1, min(wanted, usable))


def profiles() -> list[str]:
    """Names of the shipped profiles."""
    return sorted(path.stem for path in PROFILES.glob("*.yaml"))


def load_profile(name: str | os.PathLike) -> DeviceProfile:
    """A shipped profile by name, or a profile file of your own by path (`my-board.yaml`)."""
    name = str(name)
    path = Path(name) if name.endswith((".yaml", ".yml")) else PROFILES / f"{name}.yaml"
    if not path.is_file():
        raise ProfileError(f"no device profile {name!r} ({path} not found); available: "
                           f"{', '.join(profiles())}, or the path of a .yaml file")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ProfileError(f"{path}: not valid YAML: {err}") from err
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: expected a mapping of profile fields, "
                           f"got {type(data).__name__}")
    try:
        profile = DeviceProfile.model_validate(data)
    except ValidationError as err:
        raise ProfileError(f"{path}: {_fields(err)}") from err
    if path.parent == PROFILES and profile.name != path.stem:
        raise ProfileError(f"{path}: field 'name' is {profile.name!r}; make it {path.stem!r} "
                           "to match the file name")
    return profile


def _fields(err: ValidationError) -> str:
    """One 'field: problem' per error, e.g. `power_modes.1.watts: Field required`."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}"
                     for e in err.errors())
