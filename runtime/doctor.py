"""`edgert doctor`: what this machine can run, and how to fix what it cannot.

Each check returns a Finding: "ok", "note" (works, but worth knowing: an extra not
installed, no GPU) or "fault" (something edgert needs is broken), with the fix in one line.
Nothing here imports liblsl at module level, so the doctor runs where liblsl is missing.
"""
from __future__ import annotations

import importlib.util
import os
import platform
from dataclasses import asdict, dataclass
from typing import Literal

from edgert.streams.lsl_config import config_file, resolve_scope

LIBLSL_FIX = ("install liblsl: `conda install -c conda-forge liblsl`, or build it from "
              "https://github.com/sccn/liblsl (pylsl's wheels carry none for aarch64, so "
              "Jetson boards need this), then point PYLSL_LIB at liblsl.so")


@dataclass
class Finding:
    area: str
    status: Literal["ok", "note", "fault"]
    detail: str
    fix: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def liblsl() -> Finding:
    """pylsl loads liblsl when imported; a missing library raises there."""
    try:
        import pylsl
    except (ImportError, RuntimeError, OSError) as e:
        return Finding("liblsl", "fault", f"liblsl cannot be loaded ({e})", LIBLSL_FIX)
    version = pylsl.library_version()
    return Finding("liblsl", "ok", f"liblsl {version // 100}.{version % 100} at "
                   f"{pylsl.lib.lib._name} (pylsl {pylsl.__version__})")


def lsl_config() -> Finding:
    path = config_file()
    scope = resolve_scope(path)
    where = (f"{path}" + (" (LSLAPICFG)" if os.environ.get("LSLAPICFG") else "")
             if path else "liblsl's defaults (no lsl_api.cfg found; edgert logs only its "
             "warnings)")
    reach = {"machine": "this machine only", "link": "this network link",
             "site": "this site's network", "organization": "the organisation's network",
             "global": "everywhere multicast reaches"}.get(scope, scope)
    return Finding("LSL config", "ok", f"{where}; streams are discovered on {reach} "
                   f"(ResolveScope={scope})")


def onnxruntime() -> Finding:
    from edgert.runtime.backends.ort import CLASH, CLASH_FIX, clash, installed_distributions

    if clash(installed_distributions()):
        return Finding("ONNX Runtime", "fault", CLASH, CLASH_FIX)
    try:
        import onnxruntime as ort
    except ImportError as e:
        return Finding("ONNX Runtime", "fault", f"onnxruntime cannot be imported ({e})",
                       "pip install --force-reinstall onnxruntime")
    return Finding("ONNX Runtime", "ok", f"onnxruntime {ort.__version__}, providers: "
                   f"{', '.join(ort.get_available_providers())}")


def gpu() -> Finding:
    import torch

    trt = importlib.util.find_spec("tensorrt") is not None
    if not torch.cuda.is_available():
        return Finding("CUDA / TensorRT", "note", "no CUDA device visible to torch: models "
                       "run on the CPU (ort-cpu)" + ("; TensorRT is installed" if trt else ""),
                       "on an NVIDIA machine: pip install 'edgert[gpu]' (and 'edgert[trt]')")
    name = torch.cuda.get_device_name(0)
    return Finding("CUDA / TensorRT", "ok" if trt else "note",
                   f"CUDA {torch.version.cuda} on {name}; TensorRT "
                   + ("installed" if trt else "not installed"),
                   "" if trt else "pip install 'edgert[trt]' for TensorRT engines")


def device_profile() -> Finding:
    from edgert.devices.detect import detect

    found = detect()
    detail = f"profile {found.profile!r}: {'; '.join(found.reasons)}"
    if found.warnings:
        return Finding("device profile", "note", detail, "; ".join(found.warnings))
    return Finding("device profile", "ok", detail)


def methods() -> list[Finding]:
    """Per installed method: its extra present or not, and which model its demos use here
    (the model cache)."""
    from edgert.runtime.methods import installed

    found = []
    for name, entry in sorted(installed().items()):
        try:
            method = entry.load()
        except Exception as e:  # a broken plug-in must not stop the doctor
            found.append(Finding(f"method {name}", "fault", f"cannot be loaded: {e}",
                                 "pip install --force-reinstall edgert"))
            continue
        missing = method.missing()
        if missing:
            found.append(Finding(f"method {name}", "note", f"needs {', '.join(missing)}",
                                 method.install_hint()))
        elif method.kind == "stream":
            found.append(Finding(f"method {name}", "ok", f"model: {method.model_status()}"))
        else:
            found.append(Finding(f"method {name}", "ok", "ready"))
    return found


def checks() -> list[Finding]:
    """Every check, liblsl first: most of edgert needs it."""
    return [liblsl(), lsl_config(), onnxruntime(), gpu(), device_profile(), *methods()]


def machine() -> str:
    return f"{platform.machine()}, Python {platform.python_version()}, {platform.system()}"
