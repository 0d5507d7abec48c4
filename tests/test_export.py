"""Model bundles: real torch exports, real ONNX Runtime sessions, real files on disk."""
import json
import shutil

import numpy as np
import onnx
from onnx import numpy_helper
import pytest
import torch

from edgert.export.bundle import MANIFEST, Bundle, BundleError, ExportError, sha256
from edgert.export.onnx_export import export_bundle
from edgert.export.parity import ParityError, ort_session
from edgert.export.reference import LABELS, export_reference, reference_model, synthetic_eeg
from edgert.export.tensorrt import (MISSING, TensorRTMissing, build_engine, engine_for, engine_key,
                             ort_tensorrt_options, profile_shapes)
from edgert.export.variants import SLOWER
from edgert.export.verify import verify

ACCURACY_TOLERANCE = 0.01  # export_bundle's default


@pytest.fixture(scope="module")
def agreement():
    """An `evaluate` callback: the fraction of windows whose logits match the torch model's to
    1e-4. fp32 ONNX matches; int8 quantization error (~1e-2) cannot."""
    eeg, _ = synthetic_eeg(16, seed=5)
    with torch.no_grad():
        want = reference_model()(torch.from_numpy(eeg)).numpy()

    def evaluate(run) -> float:
        got = run({"eeg": eeg})["logits"]
        return float(np.mean(np.all(np.isclose(got, want, rtol=1e-4, atol=1e-4), axis=1)))
    return evaluate


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, agreement) -> Bundle:
    return export_reference(tmp_path_factory.mktemp("ref") / "bundle", fp16=True, int8=True,
                            evaluate=agreement)


@pytest.fixture
def copy(bundle, tmp_path):
    return shutil.copytree(bundle.path, tmp_path / "copy")


class Doubler(torch.nn.Module):
    def forward(self, x):
        return x * 2


class ExportsDifferently(torch.nn.Module):
    """Adds 0.01 only while being exported to ONNX: the graph is not the module."""

    def forward(self, x):
        if torch.onnx.is_in_onnx_export():
            return x * 2 + 0.01
        return x * 2


class DataDependent(torch.nn.Module):
    """A branch on a tensor's value: torch.export refuses it, TorchScript tracing takes it."""

    def forward(self, x):
        if x.abs().sum() >= 0:
            return x.relu()
        return x


class Strided(torch.nn.Module):
    """Two inputs sharing `batch`, a dynamic `time` that a strided conv shortens, two outputs."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(3, 4, 5, stride=2)

    def forward(self, x, gain):
        y = self.conv(x) * gain
        return y, y.mean(-1)


def test_reference_manifest(bundle):
    m = bundle.manifest
    assert [s.model_dump() for s in m.inputs] == [
        {"name": "eeg", "shape": ["batch", 22, 250], "dtype": "float32"}]
    assert [s.model_dump() for s in m.outputs] == [
        {"name": "logits", "shape": ["batch", 4], "dtype": "float32"}]
    assert m.labels == list(LABELS) and len(m.preprocessing["channels"]) == 22
    assert m.opset == 17 and m.example_dims == {"batch": 1} and m.torch_file == "model.pt2"
    assert set(m.versions) >= {"torch", "onnx", "onnxruntime", "edgert"}
    assert m.versions["torch"] == torch.__version__
    assert json.loads((bundle.path / MANIFEST).read_text()) == m.model_dump()


def test_every_file_is_hashed(bundle):
    files = {"model.onnx", "model.fp16.onnx", "model.int8.onnx", "model.pt2"}
    assert set(bundle.manifest.files) == files
    assert {p.name for p in bundle.path.iterdir()} == files | {MANIFEST}
    for name, digest in bundle.manifest.files.items():
        assert sha256(bundle.path / name) == digest


def test_saved_opset_is_the_declared_one(bundle):
    for variant in bundle.manifest.variants.values():
        model = onnx.load(str(bundle.path / variant.file))
        assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [17]


def test_fp32_parity_recorded_on_random_and_real_inputs(bundle):
    random, real = bundle.manifest.parity["random"], bundle.manifest.parity["real"]
    assert (random.samples, real.samples) == (4, 3)
    for p in (random, real):
        assert p.tolerance == 1e-4 and 0 <= p.max_abs <= p.tolerance and p.max_rel >= 0


def test_variants_load_and_are_measured(bundle):
    eeg, _ = synthetic_eeg(3, seed=9)
    for precision in ("fp16", "int8"):
        variant = bundle.manifest.variants[precision]
        session = ort_session(bundle.model_path(precision))
        (logits,) = session.run(None, {"eeg": eeg})
        assert logits.shape == (3, 4) and logits.dtype == np.float32
        assert variant.latency_ratio > 0 and variant.parity.samples == 7
        slower = any(f.startswith("slower than fp32") for f in variant.flagged)
        assert slower == (variant.latency_ratio > SLOWER)
    assert bundle.manifest.variants["fp16"].parity.tolerance == 1e-2
    assert bundle.manifest.variants["fp16"].parity.max_abs < 0.1
    assert bundle.manifest.variants["int8"].parity.tolerance is None
    assert bundle.manifest.variants["int8"].parity.max_abs > 0


def test_accuracy_loss_is_flagged(bundle):
    variants = bundle.manifest.variants
    assert variants["fp32"].accuracy == 1.0
    assert variants["int8"].accuracy_delta < -ACCURACY_TOLERANCE
    assert any(f.startswith("loses") for f in variants["int8"].flagged)
    for variant in (variants["fp16"], variants["int8"]):
        lost = any(f.startswith("loses") for f in variant.flagged)
        assert lost == (-variant.accuracy_delta > ACCURACY_TOLERANCE)


def test_reference_from_a_checkpoint(tmp_path, bundle):
    checkpoint = tmp_path / "weights.pt"
    torch.save(reference_model(seed=3).state_dict(), checkpoint)
    b = export_reference(tmp_path / "b", checkpoint=checkpoint)
    assert b.manifest.checkpoint_sha256 == sha256(checkpoint)
    assert set(b.manifest.variants) == {"fp32"} and b.manifest.parity["real"].samples == 3
    assert b.manifest.files["model.onnx"] != bundle.manifest.files["model.onnx"]


def test_onnx_that_differs_from_torch_fails_export(tmp_path):
    out = tmp_path / "bad"
    with pytest.raises(ParityError, match=r"output 'output'.*max abs 0\.01.*max rel"):
        export_bundle(ExportsDifferently(), {"x": torch.randn(2, 3)}, out, name="bad",
                      dynamic_axes={"x": {0: "batch"}})
    assert list(tmp_path.iterdir()) == []  # neither the bundle nor its temporary folder


def test_declared_opset_and_dynamic_dims(tmp_path):
    checkpoint = tmp_path / "weights.pt"
    module = Strided()
    torch.save(module.state_dict(), checkpoint)
    b = export_bundle(module, {"x": torch.randn(2, 3, 40), "gain": torch.ones(2, 1, 1)},
                      tmp_path / "b", name="strided", opset=13, output_names=["y", "m"],
                      dynamic_axes={"x": {0: "batch", 2: "time"}, "gain": {0: "batch"}},
                      checkpoint=checkpoint)
    model = onnx.load(str(b.model_path()))
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [13]
    assert b.manifest.opset == 13 and b.manifest.example_dims == {"batch": 2, "time": 40}
    assert [s.shape for s in b.manifest.inputs] == [["batch", 3, "time"], ["batch", 1, 1]]
    assert [s.shape for s in b.manifest.outputs] == [["batch", 4, "y_dim2"], ["batch", 4]]
    assert b.manifest.checkpoint_sha256 == sha256(checkpoint)
    session = ort_session(b.model_path())
    y, m = session.run(None, {"x": np.ones((3, 3, 80), np.float32),
                              "gain": np.ones((3, 1, 1), np.float32)})
    assert y.shape == (3, 4, 38) and m.shape == (3, 4)


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
def test_torchscript_when_torch_export_fails(tmp_path):
    b = export_bundle(DataDependent(), {"x": torch.randn(2, 5)}, tmp_path / "b", name="dd",
                      dynamic_axes={"x": {0: "batch"}})
    assert b.manifest.torch_file == "model.ts" and (b.path / "model.ts").exists()
    assert not (b.path / "model.pt2").exists()
    assert verify(b.path)["parity"]["fp32"]["max_abs"] == 0


def test_refuses_to_overwrite_a_folder_that_is_not_a_bundle(tmp_path):
    (tmp_path / "notes.txt").write_text("keep me")
    with pytest.raises(ExportError, match="not a bundle"):
        export_bundle(Doubler(), {"x": torch.randn(2)}, tmp_path, name="d")
    assert (tmp_path / "notes.txt").read_text() == "keep me"


def test_tampered_file_fails_load(copy):
    data = bytearray((copy / "model.int8.onnx").read_bytes())
    data[-1] ^= 1
    (copy / "model.int8.onnx").write_bytes(bytes(data))
    with pytest.raises(BundleError, match="model.int8.onnx has sha256"):
        Bundle.load(copy)


@pytest.mark.parametrize("name", ["../outside.onnx", "/etc/hostname", "sub/../../x.onnx"])
def test_a_manifest_naming_a_file_outside_the_bundle_is_refused(copy, name):
    (copy.parent / "outside.onnx").write_bytes((copy / "model.onnx").read_bytes())
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["variants"]["fp32"]["file"] = name
    manifest["files"][name] = "0" * 64
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="outside the bundle's folder"):
        Bundle.load(copy)


def test_verify_passes_on_a_fresh_bundle(bundle):
    report = verify(bundle.path)
    assert set(report["hashes"]) == set(bundle.manifest.files)
    assert {n: v["opset"] for n, v in report["variants"].items()} == {
        "fp32": 17, "fp16": 17, "int8": 17}
    assert all(v["loads"] and v["io_matches"] for v in report["variants"].values())
    assert report["parity"]["fp32"]["max_abs"] <= 1e-4
    assert report["parity"]["fp16"]["tolerance"] == 1e-2


def test_verify_fails_on_a_tampered_bundle(copy):
    (copy / "model.pt2").write_bytes(b"not a model")
    with pytest.raises(BundleError, match="model.pt2 has sha256"):
        verify(copy)


def test_verify_checks_inputs_and_outputs(copy, tmp_path):
    other = export_bundle(Doubler(), {"eeg": torch.randn(1, 22, 250)}, tmp_path / "other",
                          name="other", dynamic_axes={"eeg": {0: "batch"}},
                          output_names=["logits"])
    shutil.copy(other.model_path(), copy / "model.fp16.onnx")
    Bundle.load(copy, check=False).save_manifest()
    with pytest.raises(BundleError, match=r"model.fp16.onnx: its outputs"):
        verify(copy)


def test_verify_reruns_parity_against_the_torch_file(copy):
    """Changed weights with a rehashed manifest pass every hash: parity still catches them."""
    model = onnx.load(str(copy / "model.onnx"))
    weights = model.graph.initializer[0]
    weights.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weights) * 1.1, weights.name))
    onnx.save(model, str(copy / "model.onnx"))
    Bundle.load(copy, check=False).save_manifest()
    Bundle.load(copy)
    with pytest.raises(BundleError, match=r"model.onnx against model.pt2: output 'logits'"):
        verify(copy)


def test_verify_checks_the_opset(copy):
    model = onnx.load(str(copy / "model.onnx"))
    next(o for o in model.opset_import if o.domain in ("", "ai.onnx")).version = 18
    onnx.save(model, str(copy / "model.onnx"))
    Bundle.load(copy, check=False).save_manifest()
    with pytest.raises(BundleError, match=r"model.onnx: opset \[18\] but the bundle declares 17"):
        verify(copy)


def test_engine_key_depends_on_everything():
    args = ("Orin", "8.7", "10.3.0", {"eeg": [[1, 22, 250]] * 3}, "fp16", "ab" * 32)
    key = engine_key(*args)
    assert key == engine_key(*args) and len(key) == 64
    changed = ("Orin NX", "8.6", "10.4.0", {"eeg": [[2, 22, 250]] * 3}, "int8", "cd" * 32)
    for i, value in enumerate(changed):
        assert engine_key(*args[:i], value, *args[i + 1:]) != key


def test_profile_shapes(bundle):
    assert profile_shapes(bundle.manifest) == {
        "eeg": [[1, 22, 250], [1, 22, 250], [8, 22, 250]]}
    assert profile_shapes(bundle.manifest, {"batch": (2, 4, 16)}) == {
        "eeg": [[2, 22, 250], [4, 22, 250], [16, 22, 250]]}
    with pytest.raises(BundleError, match="min <= opt <= max"):
        profile_shapes(bundle.manifest, {"batch": (4, 2, 16)})
    with pytest.raises(BundleError, match=r"ranges for \['time'\]"):
        profile_shapes(bundle.manifest, {"time": (1, 1, 1)})


def test_ort_tensorrt_options(copy):
    b = Bundle.load(copy)
    options = ort_tensorrt_options(b, fp16=False, ranges={"batch": (1, 2, 4)})
    assert options["trt_fp16_enable"] is False
    assert options["trt_engine_cache_enable"] and options["trt_timing_cache_enable"]
    assert options["trt_engine_cache_path"] == str(copy / "engines" / "ort")
    assert (copy / "engines" / "ort").is_dir()
    assert options["trt_profile_min_shapes"] == "eeg:1x22x250"
    assert options["trt_profile_opt_shapes"] == "eeg:2x22x250"
    assert options["trt_profile_max_shapes"] == "eeg:4x22x250"
    assert ort_tensorrt_options(b)["trt_fp16_enable"] is True


def test_engine_build_and_cache(copy):
    b = Bundle.load(copy)
    try:
        path = build_engine(b, precision="fp16", progress=False)
    except TensorRTMissing as e:
        assert str(e) == MISSING
        pytest.skip(str(e))
    assert path.parent == copy / "engines" and path.suffix == ".plan"
    assert engine_for(Bundle.load(copy)) == path  # cached: same key, no rebuild
    entry = next(iter(Bundle.load(copy).manifest.engines.values()))
    assert entry["precision"] == "fp16" and entry["onnx_sha256"] == b.manifest.files["model.onnx"]
