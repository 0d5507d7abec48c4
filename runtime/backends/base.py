"""The one backend interface, input checks against the manifest, and choosing a backend."""
from __future__ import annotations

import logging

import numpy as np

from edgert.export.bundle import Bundle, TensorSpec
from edgert.runtime.node import BadChunk

log = logging.getLogger(__name__)

BACKENDS = ("ort-cpu", "ort-cuda", "ort-trt", "trt", "torch", "torch-cuda")


class InputMismatch(BadChunk):
    """An input that does not fit the manifest; names the input and both shapes or dtypes."""

    def __init__(self, message: str):
        super().__init__("input", message)


def fits(shape: tuple[int, ...], spec: TensorSpec) -> bool:
    """Same rank, and every fixed dim equal (named dims are dynamic)."""
    return len(shape) == len(spec.shape) and all(
        isinstance(want, str) or want == got for want, got in zip(spec.shape, shape))


def example(spec: TensorSpec, dynamic: int = 1) -> np.ndarray:
    """Zeros shaped like the spec, with every dynamic dim set to `dynamic`."""
    shape = [dynamic if isinstance(d, str) else d for d in spec.shape]
    return np.zeros(shape, dtype=spec.dtype)


class Backend:
    """Runs one bundle variant. `provider` says what actually runs it (engines fall back)."""

    name = "backend"

    def __init__(self, bundle: Bundle, variant: str = "fp32"):
        self.bundle = bundle
        self.variant = variant
        self.inputs = {s.name: s for s in bundle.manifest.inputs}
        self.provider = self.name

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def check(self, inputs: dict[str, np.ndarray]) -> None:
        """Refuse inputs the model was not exported for, before the engine sees them."""
        where = f"bundle {self.bundle.manifest.name!r}"
        missing = sorted(set(self.inputs) - set(inputs))
        if missing:
            raise InputMismatch(f"{where}: input(s) {missing} missing; it takes "
                                f"{sorted(self.inputs)}")
        for name, spec in self.inputs.items():
            value = inputs[name]
            if value.dtype != np.dtype(spec.dtype):
                raise InputMismatch(f"{where}: input {name!r} has dtype {value.dtype}, the "
                                    f"manifest says {spec.dtype}")
            if not fits(value.shape, spec):
                raise InputMismatch(f"{where}: input {name!r} has shape {list(value.shape)}, "
                                    f"the manifest says {spec.shape}")

    def warmup(self, runs: int = 5) -> None:
        """Run a few times on zeros so the first real chunk does not pay for lazy set-up."""
        feed = {name: example(spec) for name, spec in self.inputs.items()}
        for _ in range(runs):
            self.run(feed)

    def close(self) -> None:
        """Release the engine's resources."""


def open_backend(bundle: Bundle | str, kind: str = "ort-cpu", variant: str = "fp32",
                 threads: int | None = None, warmup: int = 5) -> Backend:
    """A warmed-up backend of `kind` for the bundle."""
    if not isinstance(bundle, Bundle):
        bundle = Bundle.load(bundle)
    if kind not in BACKENDS:
        raise ValueError(f"unknown backend {kind!r}; choose from {', '.join(BACKENDS)}")
    if kind.startswith("ort"):
        from edgert.runtime.backends.ort import OrtBackend
        backend: Backend = OrtBackend(bundle, variant, kind, threads)
    elif kind.startswith("torch"):
        from edgert.runtime.backends.torch_backend import TorchBackend
        backend = TorchBackend(bundle, "cuda" if kind == "torch-cuda" else "cpu", threads)
    else:
        from edgert.runtime.backends.trt import TensorRTBackend
        backend = TensorRTBackend(bundle, variant)
    if warmup:
        backend.warmup(warmup)
    return backend
