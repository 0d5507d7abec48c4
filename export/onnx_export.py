"""torch module -> bundle: model.onnx at a pinned opset, a torch file, manifest.json.

The bundle is built in a temporary folder beside `out` and moved into place only once every
check passed, so a failed export leaves nothing half-written behind.
"""
from __future__ import annotations

import logging
import platform
import shutil
import tempfile
import warnings
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch

from edgert.export import axes, parity
from edgert.export.axes import Axes
from edgert.export.bundle import MANIFEST, Bundle, ExportError, Manifest, TensorSpec, Variant, sha256
from edgert.export.graph import check_opset, specs
from edgert.export.torch_file import save_torch
from edgert.export.variants import add_variants

log = logging.getLogger(__name__)

Samples = dict[str, list[parity.Inputs]]  # "random" / "real" -> input sets


def export_bundle(
    module: torch.nn.Module,
    example_inputs: dict[str, torch.Tensor],
    out: Path,
    *,
    name: str,
    dynamic_axes: Axes | None = None,
    output_names: list[str] | None = None,
    labels: Sequence[str] = (),
    preprocessing: dict | None = None,
    checkpoint: Path | None = None,
    real_samples: list[dict[str, np.ndarray]] | None = None,
    tolerance: float = 1e-4,
    opset: int = 17,
    fp16: bool = False,
    int8: bool = False,
    evaluate: Callable[[Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]], float]
    | None = None,
    accuracy_tolerance: float = 0.01,
) -> Bundle:
    """Export `module` to a bundle folder `out`, checked against torch.

    `example_inputs` maps ONNX input names to example tensors in the order `forward` takes
    them (module and examples on the CPU). `dynamic_axes` names dynamic dims per input; output
    dims that follow them are found by running the module. `checkpoint` is only hashed, for
    provenance: load it into `module` first. Raises ParityError when ONNX Runtime or the torch
    file disagree with the module beyond `tolerance`; an existing bundle at `out` is replaced
    only on success.
    """
    out = Path(out)
    _check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    training = module.training
    module.eval()
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    work.chmod(0o755)  # mkdtemp's 0700 would hide the bundle from other users
    try:
        bundle = Bundle(work, _manifest_stub(name, labels, preprocessing, checkpoint, opset))
        dynamic_axes = dynamic_axes or {}
        _write_onnx(bundle, module, example_inputs, dynamic_axes, output_names)
        samples, expected = _references(bundle, module, real_samples)
        _check_fp32(bundle, samples, expected, tolerance)
        bundle.manifest.torch_file = save_torch(
            module, example_inputs, dynamic_axes, parity.dim_sets(bundle.manifest.example_dims)[1],
            work, _torch_check(bundle, samples["random"], expected["random"], tolerance))
        add_variants(bundle, _joined(samples), _joined(expected), fp16=fp16, int8=int8,
                     evaluate=evaluate, accuracy_tolerance=accuracy_tolerance)
        bundle.save_manifest()
        if out.exists():
            shutil.rmtree(out)
        work.rename(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        module.train(training)
    log.info("exported %s to %s", name, out)
    return Bundle.load(out)


def _check_out(out: Path) -> None:
    """Refuse to replace a folder that is not a bundle: it may hold someone's work."""
    if out.exists() and any(out.iterdir()) and not (out / MANIFEST).exists():
        raise ExportError(f"{out} exists, is not empty and is not a bundle (no {MANIFEST}); "
                          "choose another output folder or empty this one")


def _manifest_stub(name: str, labels, preprocessing: dict | None, checkpoint: Path | None,
                   opset: int) -> Manifest:
    if checkpoint is not None and not Path(checkpoint).is_file():
        raise ExportError(f"checkpoint {checkpoint} not found; give the file the weights came "
                          "from, or no checkpoint")
    return Manifest(name=name, inputs=[], outputs=[], opset=opset, variants={},
                    labels=[str(x) for x in labels], preprocessing=preprocessing or {},
                    versions=_versions(),
                    checkpoint_sha256=sha256(Path(checkpoint)) if checkpoint else None)


def _versions() -> dict[str, str]:
    try:
        edgert = version("edgert")
    except PackageNotFoundError:
        edgert = "not installed"
    return {"edgert": edgert, "python": platform.python_version(), "torch": torch.__version__,
            "onnx": onnx.__version__, "onnxruntime": ort.__version__, "numpy": np.__version__}


def _write_onnx(bundle: Bundle, module: torch.nn.Module, examples: dict[str, torch.Tensor],
                dynamic_axes: Axes, output_names: list[str] | None) -> None:
    """model.onnx, and the manifest's inputs and outputs as the saved file declares them."""
    args = tuple(examples.values())
    with torch.no_grad():
        count = len(parity.flatten(module(*args)))
    names = output_names or (["output"] if count == 1 else [f"output_{i}" for i in range(count)])
    if len(names) != count:
        raise ExportError(f"{bundle.manifest.name}: output_names {names} but the module returns "
                          f"{count} outputs")
    dims = axes.example_dims(examples, dynamic_axes, names)
    every_axis = {**axes.output_axes(module, examples, dynamic_axes, dims, names), **dynamic_axes}
    path = bundle.file("model.onnx")
    with warnings.catch_warnings():  # legacy on purpose: dynamo may not keep opset_version
        warnings.simplefilter("ignore", DeprecationWarning)
        # A GRU's zero initial state follows the batch axis in the graph; the parity checks
        # below run batches of 1 and 3, so the generic warning about it says nothing here.
        warnings.filterwarnings("ignore", "Exporting a model to ONNX with a batch_size other")
        torch.onnx.export(module, args, str(path), input_names=list(examples),
                          output_names=names, opset_version=bundle.manifest.opset,
                          dynamic_axes=every_axis, dynamo=False)
    model = onnx.load(str(path))
    check_opset(model, bundle.manifest.opset, path)
    onnx.checker.check_model(model)
    bundle.manifest.inputs = specs(model.graph.input, list(examples))
    bundle.manifest.outputs = specs(model.graph.output, names)
    bundle.manifest.example_dims = dims
    bundle.manifest.variants = {"fp32": Variant(file="model.onnx", precision="fp32")}


def _references(bundle: Bundle, module: torch.nn.Module, real: list[dict] | None
                ) -> tuple[Samples, dict[str, list[parity.Outputs]]]:
    """Seeded random inputs (dynamic dims varied) and the real samples, with torch's outputs."""
    m = bundle.manifest
    run = parity.torch_runner(module, [s.name for s in m.inputs], [s.name for s in m.outputs])
    samples = {"random": parity.random_samples(m.inputs, m.example_dims)}
    if real:
        samples["real"] = [_as_inputs(x, m.inputs, bundle) for x in real]
    return samples, {k: [_reference(run, x, m.name) for x in v] for k, v in samples.items()}


def _check_fp32(bundle: Bundle, samples: Samples, expected: dict, tolerance: float) -> None:
    m = bundle.manifest
    run = parity.ort_runner(parity.ort_session(bundle.model_path()))
    for kind, inputs in samples.items():
        m.parity[kind] = parity.measure(inputs, expected[kind], run, tolerance,
                                        f"{m.name}: model.onnx on {kind} inputs")


def _torch_check(bundle: Bundle, samples: list, expected: list, tolerance: float):
    """The saved torch file must compute what the module does, at every checked size."""
    m = bundle.manifest

    def check(model: Callable, file: str) -> None:
        run = parity.torch_runner(model, [s.name for s in m.inputs], [s.name for s in m.outputs])
        parity.measure(samples, expected, run, tolerance, f"{m.name}: {file}")
    return check


def _joined(by_kind: dict[str, list]) -> list:
    return [x for items in by_kind.values() for x in items]


def _reference(run: parity.Run, inputs: parity.Inputs, name: str) -> parity.Outputs:
    try:
        return run(inputs)
    except RuntimeError as e:
        raise ExportError(f"{name}: the module fails on inputs {parity.describe(inputs)} ({e}); "
                          "the dynamic axes do not hold at these sizes: declare fewer") from e


def _as_inputs(sample: dict, inputs: list[TensorSpec], bundle: Bundle) -> parity.Inputs:
    """A real sample checked against the input specs and cast to their dtypes."""
    missing = [s.name for s in inputs if s.name not in sample]
    if missing:
        raise ExportError(f"{bundle.manifest.name}: a real sample lacks inputs {missing}; "
                          f"give every input: {[s.name for s in inputs]}")
    return {s.name: np.asarray(sample[s.name]).astype(s.dtype) for s in inputs}
