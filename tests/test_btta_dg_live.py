"""BTTA-DG end to end: the exported bundle, the live pipeline on real LSL and ZeroMQ with a
user's state kept across sessions, `edgert demo bci`, and `evaluate`'s result keys."""
import json
import os
import subprocess

import numpy as np
import pytest
import torch

from bci_session import run_session
from edgert import pipelines
from edgert.export.verify import verify
from edgert.methods.btta_dg import synth
from edgert.methods.btta_dg.demo import overrides, recordings
from edgert.methods.btta_dg.evaluate import VARIANTS, Config, evaluate
from edgert.methods.btta_dg.figures import figures
from edgert.methods.btta_dg.export import cached_bundle
from edgert.methods.btta_dg.train import Trained, epoch, population, train_pair
from edgert.cli.console import results_table
from edgert.runtime.pipeline import Pipeline
from edgert.streams.zmq_link import free_endpoint


@pytest.fixture(scope="module")
def cache(edgert_cache):
    """A small model trained here in seconds."""
    x, y, groups = population([1, 2], 24)
    train_pair(epoch(x), y, groups, synth.RATE, synth.LABELS, 3, 0, {}, edgert_cache / "btta_dg")
    return edgert_cache


def test_bundle_bakes_the_sinc_layer_and_carries_the_source_statistics(cache):
    path = cached_bundle()
    assert verify(path)["variants"]["fp32"]["loads"]  # raises on a bad hash, opset or parity
    manifest = json.loads((path / "manifest.json").read_text())
    extra = manifest["preprocessing"]["btta_dg"]
    assert set(extra["sources"]) == {"dirichlet", "mean_softmax"}
    assert len(extra["sinc_bands_hz"]) == 16
    assert manifest["outputs"][0]["name"] == "probs"

    import onnxruntime as ort

    trained = Trained.load(cache / "btta_dg")
    x = torch.randn(2, 22, 750)
    session = ort.InferenceSession(str(path / "model.onnx"), providers=["CPUExecutionProvider"])
    onnx_probs = session.run(None, {"eeg": x.numpy()})[0]
    with torch.no_grad():
        np.testing.assert_allclose(onnx_probs, trained.model(x).numpy(), atol=1e-5)


def _pipeline(name, state, endpoint):
    return Pipeline.from_yaml(pipelines.find("bci"), overrides(name, endpoint) + [
        f"align.state={state / 'align.json'}", f"adapt.state={state / 'adapt.json'}"])


def _session(name, state, trials, seed):
    """Replay `trials` trials in real time (epoch offsets are seconds) through the pipeline;
    returns the report and the probabilities a ZeroMQ subscriber received."""
    streams, _ = recordings(name, trials, seed)
    endpoint = free_endpoint()
    pipe = _pipeline(name, state, endpoint)
    received = run_session(pipe, streams, endpoint, trials)
    return pipe.report(), received


def test_live_pipeline_decodes_every_trial_and_keeps_the_users_state(cache, tmp_path, uid):
    report, received = _session(f"bci-{uid}", tmp_path, 3, seed=0)
    assert len(received) == 3, report["nodes"]
    probs = np.concatenate(received)
    assert probs.shape == (3, 4)
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-5)
    assert report["nodes"]["adapt"]["trials"] == 3 and report["quarantined"] == {}
    assert json.loads((tmp_path / "align.json").read_text())["count"] == 3
    assert json.loads((tmp_path / "adapt.json").read_text())["gmm"]["trials"] == 3

    report, received = _session(f"bci2-{uid}", tmp_path, 1, seed=1)
    assert len(received) == 1
    assert report["nodes"]["adapt"]["resumed_from_trials"] == 3
    assert json.loads((tmp_path / "adapt.json").read_text())["gmm"]["trials"] == 4
    assert report["nodes"]["align"]["trials"] == 4


def test_demo_bci_reports_online_accuracy_adapted_aligned_and_unadapted(cache, tmp_path):
    out = tmp_path / "bci.json"
    result = subprocess.run(["edgert", "demo", "bci", "--duration", "14", "--report", str(out)],
                            capture_output=True, text=True, timeout=240, env=os.environ.copy())
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(out.read_text())
    m = report["metrics"]
    assert m["zmq_messages"] >= 2 and m["trials_decoded"] >= 1
    for key in ("", "_alignment_only", "_no_adaptation"):
        assert 0.0 <= m[f"online_accuracy{key}"] <= 1.0
        assert len(m[f"block_accuracy{key}"]) == 1
    for node in ("adapt", "baseline", "baseline_probs"):
        assert report["nodes"][node]["processed"] >= 2, node
    assert report["dropped"] == 0
    assert m["client_p99_ms"] < 1000


def test_evaluate_reports_every_variant_and_protocol(tmp_path):
    cfg = Config(subjects=3, trials_per_session=12, test_trials=8, epochs=1, real_runs=[4])
    result = evaluate(config=cfg)
    assert figures(result, tmp_path / "eval.json") == [tmp_path / "eval.bands.png"]
    assert result["method"] == "btta_dg" and result["config"]["subjects"] == 3
    assert tuple(result["results"]) == VARIANTS
    for variant, metrics in result["results"].items():
        assert 0.0 <= metrics["accuracy"] <= 1.0, variant
        assert 0.0 <= metrics["cross_session_accuracy"] <= 1.0, variant
        assert metrics["loso_adapt_ms_p99"] >= 0.0
    assert (tmp_path / "eval.bands.png").stat().st_size > 10_000
    assert len(result["learned_bands_hz"]) == 16
    assert results_table(result).row_count == len(VARIANTS)
