"""ONNX Runtime: providers in the asked order, checked after the session exists (it falls back
silently otherwise), no busy-spinning threads, I/O bound on the device when on a GPU."""
from __future__ import annotations

import logging
from importlib.metadata import distributions

import numpy as np
import onnxruntime as ort

from edgert.export.bundle import Bundle
from edgert.runtime.backends.base import Backend

log = logging.getLogger(__name__)

PROVIDERS = {
    "ort-cpu": ["CPUExecutionProvider"],
    "ort-cuda": ["CUDAExecutionProvider", "CPUExecutionProvider"],
    "ort-trt": ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"],
}


CLASH = "both onnxruntime and onnxruntime-gpu are installed and overwrite each other"
CLASH_FIX = ("pip uninstall -y onnxruntime onnxruntime-gpu && pip install onnxruntime-gpu "
             "(GPU) or onnxruntime (CPU)")


def clash(installed: set[str]) -> str | None:
    """onnxruntime and onnxruntime-gpu share one folder: with both, either may be broken."""
    if {"onnxruntime", "onnxruntime-gpu"} <= installed:
        return f"{CLASH}; fix: {CLASH_FIX}"
    return None


def installed_distributions() -> set[str]:
    return {d.metadata["Name"].lower() for d in distributions()}


def session_options(threads: int | None) -> ort.SessionOptions:
    """Threads that sleep when idle: spinning intra-op threads starve every other thread."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads or 0
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return opts


def provider_list(kind: str, bundle: Bundle) -> list:
    providers: list = list(PROVIDERS[kind])
    if kind == "ort-trt":
        from edgert.export.tensorrt import ort_tensorrt_options
        providers[0] = (providers[0], ort_tensorrt_options(bundle))
    return providers


class OrtBackend(Backend):
    name = "ort"

    def __init__(self, bundle: Bundle, variant: str = "fp32", kind: str = "ort-cpu",
                 threads: int | None = None):
        super().__init__(bundle, variant)
        problem = clash(installed_distributions())
        if problem:
            log.warning(problem)
        wanted = PROVIDERS[kind]
        missing = [p for p in wanted if p not in ort.get_available_providers()]
        if missing and kind != "ort-cpu":
            log.warning("ONNX Runtime here has no %s (installed: %s); install edgert[gpu] on a "
                        "CUDA machine", missing, ort.get_available_providers())
        self.session = ort.InferenceSession(str(bundle.model_path(variant)),
                                            session_options(threads),
                                            providers=provider_list(kind, bundle))
        self.provider = self.session.get_providers()[0]
        self.fell_back = self.provider != wanted[0]
        if self.fell_back:
            log.warning("asked ONNX Runtime for %s, it runs on %s", wanted[0], self.provider)
        self.outputs = [o.name for o in self.session.get_outputs()]
        self.on_gpu = self.provider != "CPUExecutionProvider"

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self.on_gpu:
            return self._run_bound(inputs)
        return dict(zip(self.outputs, self.session.run(self.outputs, inputs)))

    def _run_bound(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Inputs copied to the GPU once, outputs left there until the one copy back."""
        binding = self.session.io_binding()
        for name, value in inputs.items():
            binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(value, "cuda", 0))
        for name in self.outputs:
            binding.bind_output(name, "cuda", 0)
        self.session.run_with_iobinding(binding)
        return dict(zip(self.outputs, binding.copy_outputs_to_cpu()))
