"""`edgert verify DIR`: is the bundle still what was exported, and does it still compute it?

Checks, in order, stopping at the first failure with a BundleError that names the file:
every file's sha256, each ONNX file's opset, that each variant loads in ONNX Runtime with the
inputs and outputs the manifest declares, and parity of each variant against the bundle's
torch file on fresh seeded inputs, within the tolerance recorded at export. A bundle that
ships with the package also reports how it was made and whether the method's code it was
trained with is the code installed now.
"""
from __future__ import annotations

from pathlib import Path

import onnx
import onnxruntime as ort

from edgert.export import parity
from edgert.export.bundle import Bundle, BundleError, Manifest, TensorSpec, sources_sha256
from edgert.export.graph import check_opset
from edgert.export.torch_file import load

SEED = 1  # not export's seed: parity must hold on inputs the export never saw
PACKAGE = Path(__file__).resolve().parents[1]  # the edgert package's folder


def verify(path: str | Path) -> dict:
    """Run every check on the bundle at `path`; return a report of each."""
    bundle = Bundle.load(path)
    m = bundle.manifest
    report = {"bundle": str(bundle.path), "name": m.name, "hashes": dict.fromkeys(m.files, "ok"),
              "variants": {}, "parity": {}}
    sessions = {}
    for name, variant in m.variants.items():
        file = bundle.file(variant.file)
        opset = check_opset(onnx.load(str(file)), m.opset, file)
        sessions[name] = _session(file)
        _check_io(file, sessions[name], m)
        report["variants"][name] = {"file": variant.file, "opset": opset, "loads": True,
                                    "io_matches": True}
    report["parity"] = _parity(bundle, sessions)
    if m.provenance:
        report["provenance"] = _provenance(m)
    return report


def _provenance(m: Manifest) -> dict:
    """The recorded provenance, and whether the installed method code is the code it names."""
    p = m.provenance
    return {**p.model_dump(), "sources_match":
            sources_sha256(PACKAGE / p.sources) == p.sources_sha256}


def _session(file: Path) -> ort.InferenceSession:
    try:
        return parity.ort_session(file)
    except Exception as e:  # ORT raises several types for files it cannot load
        raise BundleError(f"{file}: ONNX Runtime cannot load it ({e}); export again") from e


def _dtype(ort_type: str) -> str:
    name = ort_type.removeprefix("tensor(").removesuffix(")")
    return {"float": "float32", "double": "float64"}.get(name, name)


def _check_io(file: Path, session: ort.InferenceSession, m: Manifest) -> None:
    for kind, args, declared in (("inputs", session.get_inputs(), m.inputs),
                                 ("outputs", session.get_outputs(), m.outputs)):
        found = [TensorSpec(name=a.name, shape=["?" if d is None else d for d in a.shape],
                            dtype=_dtype(a.type)) for a in args]
        if found != declared:
            raise BundleError(f"{file}: its {kind} are {[s.model_dump() for s in found]}, the "
                              f"manifest says {[s.model_dump() for s in declared]}; export again")


def _parity(bundle: Bundle, sessions: dict[str, ort.InferenceSession]) -> dict:
    m = bundle.manifest
    if m.torch_file is None:
        return {"skipped": "the bundle has no torch file"}
    run_torch = parity.torch_runner(load(bundle.file(m.torch_file)), [s.name for s in m.inputs],
                                    [s.name for s in m.outputs])
    samples = parity.random_samples(m.inputs, m.example_dims, seed=SEED)
    expected = [run_torch(x) for x in samples]
    results = {}
    for name, variant in m.variants.items():
        recorded = m.parity.get("random") if name == "fp32" else variant.parity
        tolerance = recorded.tolerance if recorded else None
        what = f"{bundle.file(variant.file)} against {m.torch_file}"
        try:
            measured = parity.measure(samples, expected, parity.ort_runner(sessions[name]),
                                      tolerance, what)
        except parity.ParityError as e:
            raise BundleError(str(e)) from e
        results[name] = measured.model_dump()
    return results
