"""Backends, the Infer node, hot swap and bench-model on real bundles exported here."""
import json
import re
import shutil
import subprocess
import threading
import time

import numpy as np
import pytest
import torch

from edgert.export.bundle import Bundle, BundleError
from edgert.export.reference import export_reference, reference_model, synthetic_eeg
from edgert.runtime import spec
from edgert.runtime.backends import InputMismatch, open_backend
from edgert.benchmarks.model import bench_model
from edgert.runtime.pipeline import Pipeline
from edgert.streams import Chunk, StreamInfo, local_clock

EEG = StreamInfo.make("eeg", 22, type="EEG", rate=250.0)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    """Bundle A (seed 0) and bundle B (other weights, given as a checkpoint)."""
    root = tmp_path_factory.mktemp("bundles")
    checkpoint = root / "other.pt"
    torch.save(reference_model(seed=1).state_dict(), checkpoint)
    return (export_reference(root / "a"), export_reference(root / "b", checkpoint=checkpoint))


def windows(n, seed=0):
    eeg, _ = synthetic_eeg(n, seed=seed)
    return eeg


def test_ort_and_torch_agree_and_say_what_runs_them(bundles):
    a, _ = bundles
    x = {"eeg": windows(3)}
    ort_out = open_backend(a, "ort-cpu").run(x)
    torch_backend = open_backend(a, "torch")
    np.testing.assert_allclose(torch_backend.run(x)["logits"], ort_out["logits"], atol=1e-4)
    assert open_backend(a, "ort-cpu").provider == "CPUExecutionProvider"
    assert torch_backend.provider == "torch-cpu"


def test_input_checks_name_the_input_and_both_shapes(bundles):
    backend = open_backend(bundles[0], "ort-cpu")
    with pytest.raises(InputMismatch, match=r"input 'eeg' has shape \[1, 21, 250\], the "
                                             r"manifest says \['batch', 22, 250\]"):
        backend.check({"eeg": np.zeros((1, 21, 250), np.float32)})
    with pytest.raises(InputMismatch, match="input 'eeg' has dtype float64"):
        backend.check({"eeg": np.zeros((1, 22, 250))})
    with pytest.raises(InputMismatch, match=r"input\(s\) \['eeg'\] missing"):
        backend.check({"x": np.zeros((1, 22, 250), np.float32)})


def test_a_tampered_bundle_is_refused(bundles, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(bundles[0].path, copy)
    with open(copy / "model.onnx", "r+b") as f:
        f.seek(-8, 2)
        f.write(b"\x00" * 8)
    with pytest.raises(BundleError, match="model.onnx has sha256"):
        open_backend(str(copy), "ort-cpu")


def test_onnx_runtime_fallback_is_detected_not_hidden(bundles):
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this machine has ONNX Runtime CUDA: no fallback to observe")
    backend = open_backend(bundles[0], "ort-cuda")
    assert backend.fell_back and backend.provider == "CPUExecutionProvider"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_torch_cuda_fp16_with_cuda_graphs_matches_cpu(bundles):
    x = {"eeg": windows(1)}
    gpu = open_backend(bundles[0], "torch-cuda")
    cpu = open_backend(bundles[0], "torch")
    assert gpu.provider == "torch-cuda-fp16" and gpu.graphs
    np.testing.assert_allclose(gpu.run(x)["logits"], cpu.run(x)["logits"], atol=5e-2)


def test_torch_cuda_says_why_it_cannot_run_here(bundles):
    if torch.cuda.is_available():
        pytest.skip("CUDA is present")
    with pytest.raises(RuntimeError, match="torch sees no CUDA device"):
        open_backend(bundles[0], "torch-cuda")


def infer_pipeline(bundle_path, **params):
    raw = {"name": "infer", "nodes": [
        {"name": "src", "node": "pipeline_nodes:Feed"},
        {"name": "model", "node": "infer", "params": {"bundle": str(bundle_path), **params}},
        {"name": "sink", "node": "pipeline_nodes:Collect"}]}
    return Pipeline(spec.parse(raw, "infer.yaml"), "infer.yaml")


def chunk_of(window, seq):
    """A (samples x channels) chunk from a (channels x samples) window."""
    t = local_clock() - 1 + np.arange(250) / 250.0
    return Chunk(np.ascontiguousarray(window.T), t, EEG, seq=seq)


def test_infer_node_runs_the_bundle_and_quarantines_a_misshapen_chunk(bundles):
    a, _ = bundles
    pipe = infer_pipeline(a.path)
    eeg = windows(4)
    pipe.start()
    for i, w in enumerate(eeg):
        pipe.nodes["src"].queue.put(chunk_of(w, i))
    pipe.nodes["src"].queue.put(Chunk(np.zeros((100, 22), np.float32),
                                      local_clock() + np.arange(100) / 250, EEG))
    time.sleep(1.0)
    pipe.stop()
    got = pipe.nodes["sink"].chunks
    want = open_backend(a, "ort-cpu").run({"eeg": eeg})["logits"]
    np.testing.assert_allclose(np.concatenate([c.data for c in got]), want, atol=1e-5)
    assert got[0].info.channels == tuple(a.manifest.labels)
    report = pipe.report()
    assert report["quarantined"]["model"] == {"input": 1}
    assert report["nodes"]["model"]["provider"] == "CPUExecutionProvider"


def outputs_of(bundle, eeg):
    return open_backend(bundle, "ort-cpu").run({"eeg": eeg})["logits"]


def test_hot_swap_between_chunks_drops_nothing_and_never_mixes(bundles):
    a, b = bundles
    eeg = windows(150)
    want_a, want_b = outputs_of(a, eeg), outputs_of(b, eeg)
    pipe = infer_pipeline(a.path)
    pipe.start()

    def feed():
        for i, w in enumerate(eeg):
            pipe.nodes["src"].queue.put(chunk_of(w, i))
            time.sleep(0.004)

    feeder = threading.Thread(target=feed)
    feeder.start()
    time.sleep(0.2)
    pipe.nodes["model"].swap(b.path)
    feeder.join()
    time.sleep(0.5)
    pipe.stop()
    got = pipe.nodes["sink"].chunks
    assert [c.seq for c in got] == list(range(150)), "every chunk served, in order"
    served_by_b = []
    for c in got:
        is_a = np.allclose(c.data[0], want_a[c.seq], atol=1e-5)
        is_b = np.allclose(c.data[0], want_b[c.seq], atol=1e-5)
        assert is_a != is_b, f"chunk {c.seq} matches neither model (or both)"
        served_by_b.append(is_b)
    first_b = served_by_b.index(True)
    assert 0 < first_b < 150 and all(served_by_b[first_b:]), "one switch, A before, B after"
    assert pipe.report()["nodes"]["model"]["swaps"] == 1


def test_watch_swaps_in_a_bundle_rewritten_on_disk(bundles, tmp_path):
    a, b = bundles
    live = tmp_path / "live"
    shutil.copytree(a.path, live)
    pipe = infer_pipeline(live, watch=0.1)
    eeg = windows(1)
    pipe.start()
    pipe.nodes["src"].queue.put(chunk_of(eeg[0], 0))
    time.sleep(0.3)
    for f in sorted(b.path.iterdir(), key=lambda p: p.name == "manifest.json"):
        shutil.copy(f, live / f.name)
    time.sleep(1.5)
    pipe.nodes["src"].queue.put(chunk_of(eeg[0], 1))
    time.sleep(0.3)
    pipe.stop()
    first, second = pipe.nodes["sink"].chunks
    np.testing.assert_allclose(first.data[0], outputs_of(a, eeg)[0], atol=1e-5)
    np.testing.assert_allclose(second.data[0], outputs_of(b, eeg)[0], atol=1e-5)


def test_bench_model_reports_both_scenarios_and_says_why_a_backend_is_skipped(bundles):
    a, _ = bundles
    single = bench_model(str(a.path), ["ort-cpu", "torch", "torch-cuda", "trt"], queries=40,
                         warmup=5)
    ort = single["results"]["ort-cpu"]
    assert ort["p50_ms"] <= ort["p90_ms"] <= ort["p99_ms"] and ort["queries"] == 40
    assert ort["rss_peak_mb"] > 0 and ort["peak_memory_mb"] >= 0
    assert single["results"]["torch"]["provider"] == "torch-cpu"
    if not torch.cuda.is_available():
        assert "no CUDA device" in single["results"]["torch-cuda"]["skipped"]
    assert "TensorRT" in single["results"]["trt"].get("skipped", "TensorRT")
    offline = bench_model(str(a.path), ["ort-cpu"], "offline", queries=64, warmup=1, batch=16)
    assert offline["results"]["ort-cpu"]["samples"] == 64
    assert offline["results"]["ort-cpu"]["samples_per_s"] > 0


def test_placement_refuses_a_bundle_over_the_profile_budget(bundles, tmp_path):
    from edgert.devices.profile import load_profile

    tiny = load_profile("cpu").model_copy(update={"name": "tiny", "memory_budget_mb": 1,
                                                  "memory_total_mb": 4})
    path = tmp_path / "tiny.yaml"
    import yaml

    path.write_text(yaml.safe_dump(tiny.model_dump()))
    result = subprocess.run(["edgert", "bench-model", str(bundles[0].path), "--backends",
                             "torch", "--queries", "5", "--warmup", "1", "--profile", str(path)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stdout + result.stderr
    assert re.search(r"needs \d+ MB at peak, more than the 1 MB", " ".join(result.stderr.split()))


def test_cli_export_verify_and_a_tampered_bundle(tmp_path):
    out = tmp_path / "ref"
    result = subprocess.run(["edgert", "export", "reference", "--out", str(out), "--int8"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "int8" in Bundle.load(out).manifest.variants
    ok = subprocess.run(["edgert", "verify", str(out)], capture_output=True, text=True,
                        timeout=300)
    assert ok.returncode == 0 and "ok" in ok.stdout
    (out / "model.int8.onnx").write_bytes(b"not a model")
    bad = subprocess.run(["edgert", "verify", str(out)], capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode == 2 and "model.int8.onnx" in bad.stderr


def test_cli_devices_picks_the_cpu_profile_here():
    result = subprocess.run(["edgert", "devices", "--json"], capture_output=True, text=True,
                            timeout=60)
    found = json.loads(result.stdout)
    if not torch.cuda.is_available():
        assert found["profile"] == "cpu"
    assert found["profile_settings"]["memory_budget_mb"] > 0


def test_infer_refuses_to_start_over_the_profile_budget(bundles, tmp_path):
    from edgert.devices.profile import load_profile
    import yaml

    tiny = load_profile("cpu").model_copy(update={"name": "tiny", "memory_budget_mb": 1,
                                                  "memory_total_mb": 4})
    profile = tmp_path / "tiny.yaml"
    profile.write_text(yaml.safe_dump(tiny.model_dump()))
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(yaml.safe_dump({"name": "p", "nodes": [
        {"name": "source", "node": "lsl_inlet", "params": {"name": "never-there"}},
        {"name": "model", "node": "infer", "params": {"bundle": str(bundles[0].path),
                                                       "backend": "torch",
                                                       "profile": str(profile)}},
        {"name": "sink", "node": "lsl_outlet"}]}))
    result = subprocess.run(["edgert", "run", str(pipeline), "--duration", "1"],
                            capture_output=True, text=True, timeout=300)
    text = " ".join(result.stderr.split())
    assert result.returncode == 1, result.stdout + result.stderr
    assert "node 'model' could not start" in text and "more than the 1 MB" in text


def test_onnxruntime_and_its_gpu_twin_together_are_reported():
    from edgert.runtime.backends.ort import clash, installed_distributions

    assert "pip uninstall -y onnxruntime onnxruntime-gpu" in clash({"onnxruntime",
                                                                    "onnxruntime-gpu", "numpy"})
    assert clash({"onnxruntime", "numpy"}) is None
    assert "onnxruntime" in installed_distributions()
