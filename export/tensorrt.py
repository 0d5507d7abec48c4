"""TensorRT engines, built on the target from the bundle's ONNX and cached under engines/.

An engine runs only on the GPU model and TensorRT version that built it, for the shapes of its
optimization profile, and building one takes minutes on a Jetson. So each engine is filed under
a key of everything it depends on, recorded (and hashed) in the manifest, and `engine_for`
builds only when asked: a device never rebuilds silently. `tensorrt` is imported lazily so
the rest of edgert runs where it cannot be installed.
"""
from __future__ import annotations

import hashlib
import json
import logging
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from edgert.export.bundle import Bundle, BundleError, Manifest
from edgert.export.parity import is_batch

log = logging.getLogger(__name__)

MISSING = ("TensorRT is not installed: pip install edgert[trt] on a machine with an NVIDIA GPU "
           "(on Jetson it comes with JetPack)")
ENGINES = "engines"
BATCH_RANGE = (1, 1, 8)
PRECISIONS = ("fp32", "fp16", "int8")

Shapes = dict[str, list[list[int]]]  # input -> [min, opt, max] shapes


class TensorRTMissing(RuntimeError):
    """TensorRT cannot be imported here."""


def import_tensorrt():
    try:
        import tensorrt
    except ImportError as e:
        raise TensorRTMissing(MISSING) from e
    return tensorrt


def profile_shapes(manifest: Manifest,
                   ranges: dict[str, tuple[int, int, int]] | None = None) -> Shapes:
    """min/opt/max shape of every input: a dynamic dim takes `ranges[dim]`, else 1/1/8 when
    batch-like, else its export example size (fixed)."""
    ranges = ranges or {}
    unknown = sorted(set(ranges) - set(manifest.example_dims))
    if unknown:
        raise BundleError(f"{manifest.name}: ranges for {unknown}, but its dynamic dims are "
                          f"{sorted(manifest.example_dims)}")
    shapes = {}
    for spec in manifest.inputs:
        shapes[spec.name] = [[d if isinstance(d, int) else _bounds(manifest, d, ranges)[k]
                              for d in spec.shape] for k in range(3)]
    return shapes


def _bounds(manifest: Manifest, dim: str, ranges: dict) -> tuple[int, int, int]:
    if dim in ranges:
        low, opt, high = ranges[dim]
        if not 1 <= low <= opt <= high:
            raise BundleError(f"{manifest.name}: range of {dim!r} must be min <= opt <= max "
                              f"(>= 1), got {ranges[dim]}")
        return low, opt, high
    if is_batch(dim):
        return BATCH_RANGE
    if dim not in manifest.example_dims:
        raise BundleError(f"{manifest.name}: no example size for dynamic dim {dim!r}; give its "
                          "min/opt/max in ranges")
    size = manifest.example_dims[dim]
    return size, size, size


def engine_key(gpu_name: str, compute_capability: str, trt_version: str, shapes: Shapes,
               precision: str, onnx_sha256: str) -> str:
    """sha256 over everything an engine depends on; any change means another engine."""
    payload = json.dumps({"gpu": gpu_name, "compute_capability": compute_capability,
                          "tensorrt": trt_version, "shapes": shapes, "precision": precision,
                          "onnx_sha256": onnx_sha256}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def timing_cache_path(bundle: Bundle, gpu_name: str, compute_capability: str,
                      trt_version: str) -> Path:
    """Per GPU and TensorRT version: a cache from another device would be refused."""
    tag = hashlib.sha256(f"{gpu_name}|{compute_capability}|{trt_version}".encode()).hexdigest()
    return bundle.path / ENGINES / f"timing-{tag[:16]}.cache"


def ort_tensorrt_options(bundle: Bundle, fp16: bool = True,
                         ranges: dict[str, tuple[int, int, int]] | None = None) -> dict:
    """Provider options for ONNX Runtime's TensorRT EP: engines and timing cached under the
    bundle, and the same optimization profile as `build_engine` uses."""
    cache = bundle.path / ENGINES / "ort"
    options = {"trt_fp16_enable": fp16, "trt_engine_cache_enable": True,
               "trt_engine_cache_path": str(cache), "trt_timing_cache_enable": True,
               "trt_timing_cache_path": str(cache)}
    if bundle.manifest.example_dims:
        shapes = profile_shapes(bundle.manifest, ranges)
        for k, which in enumerate(("min", "opt", "max")):
            options[f"trt_profile_{which}_shapes"] = ",".join(
                f"{name}:{'x'.join(map(str, s[k]))}" for name, s in shapes.items())
    cache.mkdir(parents=True, exist_ok=True)
    return options


def gpu_identity() -> tuple[str, str]:
    """(name, compute capability) of GPU 0, from torch's CUDA or else nvidia-smi."""
    import torch

    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability(0)
        return torch.cuda.get_device_name(0), f"{major}.{minor}"
    try:
        out = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=name,compute_cap",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=10, check=True).stdout
        name, capability = out.splitlines()[0].rsplit(",", 1)
        return name.strip(), capability.strip()
    except (OSError, subprocess.SubprocessError, IndexError, ValueError) as e:
        raise RuntimeError(f"cannot identify the GPU ({e}); pass gpu=(name, compute capability)"
                           ) from e


def _record(bundle: Bundle, trt_version: str, precision: str, ranges, gpu) -> tuple[str, dict]:
    if precision not in PRECISIONS:
        raise BundleError(f"{bundle.path}: precision {precision!r}; use one of {PRECISIONS}")
    name, capability = gpu or gpu_identity()
    record = {"gpu": name, "compute_capability": capability, "tensorrt": trt_version,
              "shapes": profile_shapes(bundle.manifest, ranges), "precision": precision,
              "onnx_sha256": bundle.manifest.files[bundle.manifest.variants["fp32"].file]}
    key = engine_key(name, capability, trt_version, record["shapes"], precision,
                     record["onnx_sha256"])
    return key, record


def engine_for(bundle: Bundle, *, precision: str = "fp16",
               ranges: dict[str, tuple[int, int, int]] | None = None,
               gpu: tuple[str, str] | None = None, build: bool = False) -> Path:
    """The cached engine for this GPU, TensorRT, shapes and precision; built only if `build`."""
    trt = import_tensorrt()
    key, record = _record(bundle, trt.__version__, precision, ranges, gpu)
    entry = bundle.manifest.engines.get(key)
    if entry and bundle.file(entry["file"]).exists():
        return bundle.file(entry["file"])
    if not build:
        have = [f"{e['gpu']} TensorRT {e['tensorrt']} {e['precision']}"
                for e in bundle.manifest.engines.values()]
        raise BundleError(f"{bundle.path}: no TensorRT engine for {record['gpu']} (compute "
                          f"{record['compute_capability']}), TensorRT {trt.__version__}, "
                          f"{precision}, shapes {record['shapes']}; it has {have or 'none'}. "
                          "Build one with engine_for(..., build=True): minutes on a Jetson")
    return build_engine(bundle, precision=precision, ranges=ranges, gpu=gpu)


def build_engine(bundle: Bundle, *, precision: str = "fp16",
                 ranges: dict[str, tuple[int, int, int]] | None = None,
                 gpu: tuple[str, str] | None = None, progress: bool = True) -> Path:
    """Build, save as engines/<key>.plan and record it in the manifest.

    int8 has no calibrator here: TensorRT takes int8 scales only from Q/DQ nodes in the ONNX
    file and runs the other layers in fp16."""
    trt = import_tensorrt()
    key, record = _record(bundle, trt.__version__, precision, ranges, gpu)
    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    network = builder.create_network(_network_flags(trt))
    parser = trt.OnnxParser(network, logger)
    onnx_path = bundle.model_path("fp32")
    if not parser.parse_from_file(str(onnx_path)):
        errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
        raise BundleError(f"{onnx_path}: TensorRT cannot parse it: {errors}")
    config = builder.create_builder_config()
    for flag in {"fp32": [], "fp16": ["FP16"], "int8": ["FP16", "INT8"]}[precision]:
        config.set_flag(getattr(trt.BuilderFlag, flag))
    profile = builder.create_optimization_profile()
    for name, (low, opt, high) in record["shapes"].items():
        profile.set_shape(name, low, opt, high)
    config.add_optimization_profile(profile)
    cache_file = timing_cache_path(bundle, record["gpu"], record["compute_capability"],
                                   trt.__version__)
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    config.set_timing_cache(config.create_timing_cache(
        cache_file.read_bytes() if cache_file.exists() else b""), False)
    with _progress(trt, config, progress, f"{bundle.manifest.name} {precision}"):
        plan = builder.build_serialized_network(network, config)
    if plan is None:
        raise RuntimeError(f"{bundle.path}: TensorRT could not build a {precision} engine; "
                           "its log above says why")
    cache_file.write_bytes(config.get_timing_cache().serialize())
    file = f"{ENGINES}/{key}.plan"
    bundle.file(file).write_bytes(plan)
    built = datetime.now(timezone.utc).isoformat(timespec="seconds")
    bundle.manifest.engines[key] = {**record, "file": file, "built": built}
    bundle.save_manifest()
    log.info("%s: TensorRT engine saved as %s", bundle.path, file)
    return bundle.file(file)


def _network_flags(trt) -> int:
    """Explicit batch: the default from TensorRT 10, a flag before."""
    if int(trt.__version__.split(".")[0]) >= 10:
        return 0
    return 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)


@contextmanager
def _progress(trt, config, show: bool, what: str) -> Iterator[None]:
    """Rich progress bars fed by TensorRT's IProgressMonitor where this TensorRT has one and
    the output is a terminal; else one line (the CLI says every 10 s that it still works)."""
    from rich.console import Console
    from rich.progress import Progress

    if not show or not hasattr(trt, "IProgressMonitor") or not Console().is_terminal:
        log.info("building the TensorRT engine for %s (minutes on a Jetson)", what)
        yield
        return
    with Progress(transient=True) as bar:
        monitor = _monitor(trt, bar)
        config.progress_monitor = monitor
        yield


def _monitor(trt, bar):
    class Monitor(trt.IProgressMonitor):
        def __init__(self):
            trt.IProgressMonitor.__init__(self)
            self.tasks = {}

        def phase_start(self, phase_name, parent_phase, num_steps):
            indent = "  " if parent_phase else ""
            self.tasks[phase_name] = bar.add_task(indent + phase_name, total=num_steps)

        def step_complete(self, phase_name, step):
            bar.update(self.tasks[phase_name], completed=step + 1)
            return True

        def phase_finish(self, phase_name):
            bar.remove_task(self.tasks.pop(phase_name))

    return Monitor()
