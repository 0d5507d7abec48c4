"""Parity: ONNX Runtime must compute what torch computes, on random and on real inputs.

An exported graph that quietly computes something else is worse than a failed export, so
`measure` raises `ParityError` when an output differs by more than the tolerance. An element
passes when |onnx - torch| <= tolerance * (1 + |torch|): absolute near zero, relative above.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch

from edgert.export.bundle import ExportError, Parity, TensorSpec

REL_FLOOR = 1e-3  # |torch| below this counts as this in max_rel, so zeros do not divide

Inputs = dict[str, np.ndarray]
Outputs = dict[str, np.ndarray]
Run = Callable[[Inputs], Outputs]


class ParityError(ExportError):
    """ONNX Runtime and torch disagree beyond the tolerance."""


def is_batch(dim: str) -> bool:
    return "batch" in dim.lower()


def dim_sets(example_dims: dict[str, int]) -> list[dict[str, int]]:
    """Sizes to check dynamic dims at: batch-like dims at 1 and 3, others at 1x and 2x the
    example (multiples keep stride and patch constraints)."""
    return [{d: 1 if is_batch(d) else n for d, n in example_dims.items()},
            {d: 3 if is_batch(d) else 2 * n for d, n in example_dims.items()}]


def random_inputs(specs: Sequence[TensorSpec], dims: dict[str, int], seed: int) -> Inputs:
    """Seeded inputs for the specs: normal floats, integers in {0, 1}, random booleans."""
    rng = np.random.default_rng(seed)
    inputs = {}
    for spec in specs:
        shape = [d if isinstance(d, int) else dims[d] for d in spec.shape]
        dtype = np.dtype(spec.dtype)
        if dtype.kind == "f":
            inputs[spec.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind == "b":
            inputs[spec.name] = rng.random(shape) < 0.5
        else:
            inputs[spec.name] = rng.integers(0, 2, shape).astype(dtype)
    return inputs


def random_samples(specs: Sequence[TensorSpec], example_dims: dict[str, int],
                   n: int = 4, seed: int = 0) -> list[Inputs]:
    """n seeded input sets that alternate between the sizes of `dim_sets`."""
    sizes = dim_sets(example_dims)
    return [random_inputs(specs, sizes[i % len(sizes)], seed + i) for i in range(n)]


def ort_session(path: Path, threads: int | None = None) -> ort.InferenceSession:
    """A CPU session of its own. No spinning: idle ORT threads would steal the cores."""
    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads:
        options.intra_op_num_threads = threads
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def ort_runner(session: ort.InferenceSession) -> Run:
    names = [o.name for o in session.get_outputs()]
    return lambda inputs: dict(zip(names, session.run(names, inputs)))


def flatten(out) -> list[torch.Tensor]:
    """A module's result as a list of tensors: a tensor, a tuple/list, or a dict's values."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return list(out.values())
    return list(out)


def torch_runner(module: Callable, input_names: Sequence[str],
                 output_names: Sequence[str]) -> Run:
    """Call the module positionally in `input_names` order, as the ONNX export did."""
    def run(inputs: Inputs) -> Outputs:
        args = [torch.from_numpy(np.ascontiguousarray(inputs[n])) for n in input_names]
        with torch.no_grad():
            outs = flatten(module(*args))
        if len(outs) != len(output_names):
            raise ExportError(f"the torch model returns {len(outs)} outputs, the bundle "
                              f"declares {list(output_names)}")
        return {n: t.detach().cpu().numpy() for n, t in zip(output_names, outs)}
    return run


def _errors(expected: np.ndarray, actual: np.ndarray, tolerance: float | None):
    """(max abs, max rel, every element within tolerance)."""
    if expected.shape != actual.shape:
        return float("inf"), float("inf"), False
    a, b = actual.astype(np.float64), expected.astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    diff = np.where(both_nan, 0.0, np.abs(a - b))
    rel = diff / np.maximum(np.abs(np.nan_to_num(b)), REL_FLOOR)
    ok = tolerance is None or bool(np.all(both_nan | (diff <= tolerance * (1 + np.abs(b)))))
    return float(np.max(diff, initial=0.0)), float(np.max(rel, initial=0.0)), ok


def describe(inputs: Inputs) -> str:
    return ", ".join(f"{k} {list(v.shape)}" for k, v in inputs.items())


FIX = ("look for randomness, branches on torch.onnx.is_in_onnx_export() or data-dependent "
       "control flow frozen by tracing; raise the tolerance if the difference is expected")


def measure(samples: Sequence[Inputs], expected: Sequence[Outputs], run: Run,
            tolerance: float | None, what: str, fix: str = FIX) -> Parity:
    """Compare `run` with torch's `expected` outputs over `samples`; raise past tolerance,
    naming `what` was measured and how to `fix` it."""
    max_abs = max_rel = 0.0
    for inputs, want in zip(samples, expected):
        got = run(inputs)
        for name, reference in want.items():
            abs_err, rel_err, ok = _errors(reference, np.asarray(got[name]), tolerance)
            if not ok:
                raise ParityError(
                    f"{what}: output {name!r} differs from torch by max abs {abs_err:.3g}, max "
                    f"rel {rel_err:.3g} (tolerance {tolerance:g}) on inputs {describe(inputs)}: "
                    f"{fix}")
            max_abs, max_rel = max(max_abs, abs_err), max(max_rel, rel_err)
    return Parity(max_abs=max_abs, max_rel=max_rel, samples=len(samples), tolerance=tolerance)
