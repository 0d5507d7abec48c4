"""CogMoE end to end: the bundle, the live car pipeline on real LSL with a sensor that never
connects, `edgert demo car`, and `evaluate`'s result keys."""
import json
import os
import subprocess
import time

import numpy as np
import pytest

from edgert import pipelines
from edgert.export.verify import verify
from edgert.methods.cogmoe.demo import overrides, recordings
from edgert.methods.cogmoe.evaluate import VARIANTS, Config, evaluate
from edgert.methods.cogmoe.figures import figures
from edgert.methods.cogmoe.export import OUTPUTS, cached_bundle
from edgert.methods.cogmoe.simulate import LEVELS
from edgert.methods.cogmoe.train import Trained, dataset, fit
from edgert.cli.console import results_table
from edgert.runtime.demo import Client
from edgert.runtime.pipeline import Pipeline
from edgert.streams.replay import Replay


@pytest.fixture(scope="module")
def cache(edgert_cache):
    """A small CogMoE trained here in seconds."""
    data = dataset([1], list(LEVELS), 40)
    Trained("cogmoe", fit("cogmoe", data, epochs=2)).save(edgert_cache / "cogmoe")
    return edgert_cache


def test_bundle_publishes_load_and_gate_weights(cache):
    path = cached_bundle()
    assert verify(path)["variants"]["fp32"]["loads"]
    manifest = json.loads((path / "manifest.json").read_text())
    assert tuple(manifest["labels"]) == OUTPUTS and len(OUTPUTS) == 17
    assert manifest["preprocessing"]["layout"] == "channels_last"


def test_bundle_leaves_out_a_sensor_that_sent_nothing_as_the_model_does(cache):
    """ONNX Runtime against torch on the same windows, with no sensor gone and with each
    sensor gone in turn (its tokens all masked, its features whatever stage 1 filled): the
    exported graph takes the left-out path from the input, not from the trace."""
    import onnxruntime as ort
    import torch

    from edgert.methods.cogmoe import features as feats
    from edgert.methods.cogmoe.export import sample_tokens

    path = cached_bundle()
    session = ort.InferenceSession(str(path / "model.onnx"), providers=["CPUExecutionProvider"])
    model = Trained.load(cache / "cogmoe").model
    x = np.repeat(sample_tokens(1), 5, 0)
    x[..., feats.FEATURES - 1] = 0.0
    steps = x.shape[1] // 4
    for k in range(4):
        x[k + 1, k * steps:(k + 1) * steps, feats.FEATURES - 1] = 1.0
    ours = session.run(None, {"tokens": x})[0]
    with torch.no_grad():
        theirs = model(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(ours, theirs, atol=1e-4)
    # each window's estimate differs from the one with every sensor present: the match above
    # is five answers, not one
    assert np.abs(ours[1:, :2] - ours[:1, :2]).max(1).min() > 1e-4


def test_car_pipeline_keeps_estimating_with_a_sensor_that_never_connects(cache, uid):
    name = f"car-{uid}"
    streams, _, _ = recordings(name, 16)
    streams = [r for r in streams if not r.info.name.endswith("-gaze")]
    pipe = Pipeline.from_yaml(pipelines.find("car"), overrides(name))
    replay = Replay(streams, chunk_size=8)
    outlets = replay.open()
    pipe.start()
    client = Client(f"{name}-load")
    try:
        for outlet in outlets:
            assert outlet.wait_for_consumers(10.0)
        client.thread.start()
        replay.start()
        deadline = time.monotonic() + 40
        while client.samples < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        pipe.stop()
        client.stop()
        replay.stop()
    report = pipe.report()
    assert client.samples >= 3, report["nodes"]
    est = np.concatenate(client.data)
    np.testing.assert_allclose(est[:, :2].sum(1), 1.0, rtol=1e-5)
    gaze = OUTPUTS.index("gate_gaze_clean")
    np.testing.assert_allclose(est[:, gaze:gaze + 3].sum(1), 1.0, rtol=1e-5)
    assert report["nodes"]["stage1"]["windows_missing_sensor"]["gaze"] >= 3
    assert report["nodes"]["align"]["stale"] > 0 and report["quarantined"] == {}


def test_demo_car_reports_f1_gates_and_a_plot(cache, tmp_path):
    out = tmp_path / "car.json"
    result = subprocess.run(["edgert", "demo", "car", "--duration", "24", "--report", str(out)],
                            capture_output=True, text=True, timeout=300, env=os.environ.copy())
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(out.read_text())
    m = report["metrics"]
    assert m["estimates"] >= 5
    assert 0.0 <= m["online_accuracy"] <= 1.0 and 0.0 <= m["online_f1"] <= 1.0
    assert m["client_p99_ms"] > 0
    [figure] = report["figures"]
    assert figure.startswith(str(tmp_path)) and os.path.getsize(figure) > 10_000
    assert figure in " ".join(result.stdout.split()), "the figure's path is printed"


def test_evaluate_reports_every_variant_at_every_level(tmp_path):
    cfg = Config(train_seeds=[1], test_seeds=[101], seconds=40, epochs=1)
    result = evaluate(config=cfg)
    assert figures(result, tmp_path / "eval.json") == [tmp_path / "eval.f1.png"]
    assert tuple(result["results"]) == VARIANTS
    for variant, levels in result["results"].items():
        assert set(levels) == set(LEVELS), variant
        for scores in levels.values():
            assert 0.0 <= scores["f1"] <= 1.0 and 0.0 <= scores["accuracy"] <= 1.0
    assert set(result["gaps"]) == set(VARIANTS) - {"cogmoe"}
    assert set(result["gaps"]["boosted_trees"]) == set(LEVELS)
    assert set(result["gates"]["utilisation"]) == set(LEVELS)
    assert "noise_robust_vs_noise" in result["gates"]
    assert result["stage1"]["severe"]["stage1_rmse"] > 0
    assert set(result["stage1"]["severe"]["in_partial_holes"]) == {"stage1_rmse", "linear_rmse"}
    assert (tmp_path / "eval.f1.png").stat().st_size > 10_000
    assert results_table(result).row_count == len(VARIANTS)


@pytest.mark.slow
def test_demo_car_gate_turns_to_recovery_while_the_gaze_tracker_is_unplugged(tmp_path):
    """The demo's own model (trained --quick on first use, in a cache of this test's own):
    the gaze sensor's recovery weight is higher while its stream is gone than otherwise."""
    out = tmp_path / "car.json"
    env = {**os.environ, "EDGERT_CACHE": str(tmp_path / "cache")}
    result = subprocess.run(["edgert", "demo", "car", "--duration", "60", "--report", str(out)],
                            capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    m = json.loads(out.read_text())["metrics"]
    assert m["gaze_recovery_gate_during_dropout"] > m["gaze_recovery_gate_otherwise"] + 0.2, m
