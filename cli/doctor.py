"""`edgert doctor`: what this machine can run, and how to fix what it cannot.

Each check returns a Finding: "ok", "note" (works, but worth knowing: an extra not
installed, no GPU) or "fault" (something edgert needs is broken), with the fix in one line.
Nothing here imports liblsl at module level, so the doctor runs where liblsl is missing.
"""
from __future__ import annotations

import configparser
import importlib.util
import os
import platform
from dataclasses import asdict, dataclass
from pathlib import Path
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


LSL_PORTS = (16572, 32)  # liblsl's defaults: [ports] BasePort, PortRange
FIREWALL_FIX = ("to keep them on this machine, drop them at the firewall, e.g. `nft add rule "
                "inet filter input iifname != lo tcp dport {lo}-{hi} drop` and the same for "
                "udp (or run the pipeline in a network namespace)")


def lsl_ports(path: Path | None) -> tuple[int, int]:
    """The first and last port an LSL outlet may listen on, as the configuration in force
    says ([ports] BasePort and PortRange)."""
    base, span = LSL_PORTS
    if path is not None:
        parser = configparser.ConfigParser(inline_comment_prefixes=(";", "#"), strict=False)
        parser.read(path)
        base = parser.getint("ports", "BasePort", fallback=base)
        span = parser.getint("ports", "PortRange", fallback=span)
    return base, base + span - 1


def lsl_exposure() -> Finding:
    """liblsl binds an outlet's data (TCP) and time (UDP) servers to every interface: its
    ListenAddress setting reaches only the multicast responders, so no configuration keeps
    an outlet on loopback."""
    lo, hi = lsl_ports(config_file())
    return Finding("LSL exposure", "note", f"every LSL outlet (edgert's and others') serves "
                   f"its samples, unauthenticated, on TCP and UDP ports {lo}-{hi} of every "
                   "interface, whatever lsl_api.cfg says; any host that reaches them can pull "
                   "the stream", FIREWALL_FIX.format(lo=lo, hi=hi))


def listeners(spec) -> list[Finding]:
    """What a pipeline will listen on or connect to, node by node, and who can reach it."""
    from edgert.runtime.nodes.zmq_io import ZMQIn, ZMQOut
    from edgert.runtime.registry import BUILTIN
    from edgert.streams.zmq_security import exposed

    found = []
    for node in spec.nodes:
        path = BUILTIN.get(node.node, node.node)
        if path.endswith(":LSLOutlet"):
            lo, hi = lsl_ports(config_file())
            found.append(Finding(f"node {node.name}", "note", f"LSL outlet: TCP and UDP ports "
                                 f"{lo}-{hi} on every interface, unauthenticated",
                                 FIREWALL_FIX.format(lo=lo, hi=hi)))
        elif path.endswith((":ZMQIn", ":ZMQOut")):
            found.append(_zmq_listener(node, ZMQIn if path.endswith(":ZMQIn") else ZMQOut,
                                       exposed))
    if spec.metrics_port is not None:
        found.append(Finding("metrics", "ok", f"Prometheus on 127.0.0.1:{spec.metrics_port} "
                             "(this machine only)"))
    return found


def _zmq_listener(node, cls, exposed) -> Finding:
    p = cls.Params.model_validate(node.params)
    binds = p.bind if p.bind is not None else p.pattern in ("pull", "rep", "router", "pub")
    if p.pattern == "reply":
        return Finding(f"node {node.name}", "ok", f"answers in-process through {p.endpoint}")
    verb = "listens on" if binds else "connects to"
    where = f"ZeroMQ {p.pattern.upper()} {verb} {p.endpoint}"
    if not exposed(p.endpoint):
        return Finding(f"node {node.name}", "ok", f"{where}: this machine only")
    if p.keys is not None:
        who = f"clients listed in {p.clients}" if binds else "the server whose key it holds"
        return Finding(f"node {node.name}", "ok", f"{where}: off this machine, CURVE "
                       f"encrypted, {who} only")
    if p.insecure:
        return Finding(f"node {node.name}", "note", f"{where}: off this machine, in the clear "
                       "(insecure: true)", "give CURVE keys (`edgert keys`)")
    return Finding(f"node {node.name}", "fault", f"{where}: off this machine with no keys; "
                   "the run will refuse to start", "give CURVE keys (`edgert keys`; params "
                   "keys, clients or server_key), or set insecure: true")


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
                       "on an NVIDIA machine, from the checkout: pip install '.[gpu]' "
                       "(and '.[trt]')")
    name = torch.cuda.get_device_name(0)
    return Finding("CUDA / TensorRT", "ok" if trt else "note",
                   f"CUDA {torch.version.cuda} on {name}; TensorRT "
                   + ("installed" if trt else "not installed"),
                   "" if trt else "from the checkout: pip install '.[trt]' for TensorRT engines")


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
    from edgert.methods.cache import status as model_status
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
            found.append(Finding(f"method {name}", "ok", f"model: {model_status(name)}"))
        else:
            found.append(Finding(f"method {name}", "ok", "ready"))
    return found


def checks() -> list[Finding]:
    """Every check, liblsl first: most of edgert needs it."""
    return [liblsl(), lsl_config(), lsl_exposure(), onnxruntime(), gpu(), device_profile(),
            *methods()]


def machine() -> str:
    return f"{platform.machine()}, Python {platform.python_version()}, {platform.system()}"
