"""AVDE: the image set and viewer simulator, the THINGS-EEG2 loader on files written here, the
parts of the method (tokenizer codes, masked modelling, the key/value cache of next-scale
prediction against its teacher-forced pass), the bundle (ONNX generation equal to torch's),
the live eeg2image pipeline on real LSL and ZeroMQ, and evaluate's result keys."""
import json
import shutil
import subprocess
import time

import numpy as np
import pytest
import torch

from edgert import pipelines
from edgert.export.bundle import Bundle, BundleError
from edgert.export.verify import verify
from edgert.methods.avde import images as image_set
from edgert.methods.avde import simulate
from edgert.methods.avde.data import (Viewing, pretraining_corpus, read, read_things,
                                      simulated, ssvep_trials)
from edgert.methods.avde.demo import overrides, recordings
from edgert.methods.avde.evaluate import VARIANTS, Config, block_probe, evaluate
from edgert.methods.avde.export import cached_bundle
from edgert.methods.avde.figures import figures
from edgert.methods.avde.generate import Generator, Sampling
from edgert.methods.avde.model import (UNKNOWN, LaBraM, Tokenizer, electrode_index,
                                       masked_modelling_loss)
from edgert.methods.avde.node import decode_png
from edgert.methods.avde.train import Config as TrainConfig
from edgert.methods.avde.train import train_all
from edgert.methods.avde.var import VAR, Step
from edgert.methods.avde.vqvae import MultiScaleVQ
from edgert.runtime.plugin import Data, DataError
from edgert.runtime.backends import open_backend
from edgert.runtime.pipeline import Pipeline
from edgert.streams.lsl import Inlet
from edgert.streams.replay import Replay
from edgert.streams.zmq_link import Subscriber, free_endpoint

TINY = dict(per_concept=1, repetitions=1, test_repetitions=2, image_steps=10, tokenizer_steps=10,
            pretrain_steps=10, simulated_s=60, align_epochs=1, vq_steps=10, var_steps=10)


@pytest.fixture(scope="module")
def cache(edgert_cache):
    """A tiny model trained here in seconds, as this machine's cached one."""
    viewing = simulated(1, 1, 1, 2)
    trained, _, _ = train_all(viewing, TrainConfig(**TINY))
    trained.save(edgert_cache / "avde")
    return edgert_cache


def test_held_out_concepts_are_never_training_concepts_and_renders_differ_by_attribute():
    held, train = image_set.held_out(), image_set.training_concepts()
    assert len(held) == 48 and not set(held) & set(train)
    assert len(held) + len(train) == len(image_set.CONCEPTS) == 384
    a, b = image_set.render(0), image_set.render(1)  # differ in texture only
    assert a.shape == (3, 32, 32) and 0 <= a.min() and a.max() <= 1
    assert np.abs(a - b).sum() > 10
    jittered = image_set.render(0, np.random.default_rng(1))
    assert 0 < np.abs(jittered - a).mean() < np.abs(a - image_set.render(100)).mean() * 2


def test_the_viewer_evokes_a_response_that_depends_on_the_image():
    person = simulate.make_subject(3)
    rng = np.random.default_rng(0)
    red = np.mean([simulate.evoked(person, 0, rng) for _ in range(20)], 0)
    other = np.mean([simulate.evoked(person, 383, rng) for _ in range(20)], 0)
    assert red.shape == (17, 200)
    assert np.abs(red - other).max() > 2.0  # uV: the attributes change the ERP
    peak = np.argmax(np.abs(red).max(0)) / simulate.RATE
    assert 0.05 < peak < 0.6  # evoked components, not noise at the edges
    x, concepts = simulate.trials(person, np.array([0, 1, 2]), 2)
    assert x.shape == (6, 17, 200) and sorted(concepts) == [0, 0, 1, 1, 2, 2]


def _write_things(folder, images=3, reps=2, rate=100.0, volts=True, bad=None):
    """A THINGS-EEG2 subject folder in the published layout, with concept image folders."""
    from PIL import Image

    rng = np.random.default_rng(0)
    times = np.arange(-0.2, 0.8, 1 / rate)
    names = ["P3", "Pz", "Oz", "O1"]
    for k, (file, count) in enumerate((("preprocessed_eeg_training.npy", images),
                                       ("preprocessed_eeg_test.npy", 2))):
        data = rng.normal(size=(count, reps, len(names), len(times))) * (1e-5 if volts else 10)
        value = {"preprocessed_eeg_data": data, "ch_names": names, "times": times}
        if bad and k == 0:
            value.pop(bad)
        np.save(folder / file, value, allow_pickle=True)
        images_dir = folder.parent / "image_set" / ("training_images" if k == 0 else "test_images")
        for i in range(count):
            concept = images_dir / f"{i + 1:05d}_thing_{k}{i}"
            concept.mkdir(parents=True, exist_ok=True)
            Image.fromarray(rng.integers(0, 255, (40, 40, 3), dtype=np.uint8)).save(
                concept / "a.jpg")
    return folder


def test_things_eeg2_files_read_at_200_hz_in_microvolts_with_their_images(tmp_path):
    subject = tmp_path / "sub-01"
    subject.mkdir()
    viewing = read(Data((_write_things(subject),)))
    assert isinstance(viewing, Viewing)
    assert viewing.eeg.shape == ((3 + 2) * 2, 4, 200)  # 0-0.8 s resampled to 200 Hz, padded
    assert viewing.images.shape == (5, 3, 32, 32) and viewing.names[0] == "thing 00"
    assert viewing.test.sum() == 4 and set(viewing.shown[viewing.test]) == {3, 4}
    assert 1 < np.abs(viewing.eeg[:, :, :160]).mean() < 100  # volts became microvolts
    assert np.all(viewing.eeg[:, :, 161:] == 0)


@pytest.mark.parametrize("broken, field", [("missing", "preprocessed_eeg_test.npy"),
                                           ("times", "times"), ("garbage", "not a THINGS")])
def test_a_malformed_things_folder_is_named_with_what_is_wrong(tmp_path, broken, field):
    subject = tmp_path / "sub-01"
    subject.mkdir()
    _write_things(subject, bad="times" if broken == "times" else None)
    if broken == "missing":
        (subject / "preprocessed_eeg_test.npy").unlink()
    if broken == "garbage":
        (subject / "preprocessed_eeg_training.npy").write_bytes(b"not numpy")
    with pytest.raises(DataError, match=field):
        read_things(subject)


def test_cli_names_the_folder_when_it_is_not_a_things_subject(tmp_path):
    result = subprocess.run(["edgert", "evaluate", "avde", "--data", str(tmp_path), "--out",
                             str(tmp_path / "x.json")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "preprocessed_eeg_training.npy" in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_pretraining_reads_the_shared_real_eeg_and_the_ssvep_check_its_targets():
    corpus, seconds = pretraining_corpus()
    assert len(corpus) == 6 and sum(seconds.values()) > 600
    windows, channels = corpus[0]
    assert windows.shape[1:] == (len(channels), 800)
    x, y, channels, frequencies = ssvep_trials()
    assert x.shape[1:] == (len(channels), 200) and set(y) == {0, 1, 2} and len(y) > 200
    assert frequencies == (10, 12, 15) and "TRG" not in channels  # the flat trigger is left out


def test_block_probe_reads_a_signal_and_not_noise():
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1, 2], 60)
    noise = rng.normal(size=(180, 5))
    assert block_probe(noise, labels) < 0.6
    assert block_probe(noise + 3 * np.eye(3)[labels] @ rng.normal(size=(3, 5)), labels) > 0.9


def test_tokenizer_codes_and_symmetric_masked_modelling_train():
    torch.manual_seed(0)
    x = torch.randn(4, 3, 400) * 20
    e = electrode_index(["Oz", "Pz", "nonsense"])
    assert e[-1] == UNKNOWN and e[0] != e[1]  # unknown names share one embedding row
    tokenizer, encoder = Tokenizer(codes=16), LaBraM(32, 1)
    index, q, commit = tokenizer.codes(x, e)
    assert index.shape == (4, 6) and q.shape == (4, 6, 32)
    head = torch.nn.Linear(32, 16)
    opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], 1e-2)
    tokenizer.eval()
    losses = []
    for _ in range(20):
        loss = masked_modelling_loss(encoder, head, tokenizer, x, e)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_the_key_value_cache_gives_the_teacher_forced_logits_and_scales_see_only_coarser_ones():
    torch.manual_seed(0)
    vq, var = MultiScaleVQ().eval(), VAR().eval()
    for block in var.blocks:
        torch.nn.init.normal_(block.ada[1].weight, std=0.05)
    targets, inputs = vq.tokens(torch.rand(2, 3, 32, 32))
    assert targets.shape == (2, 85) and inputs.shape == (2, 84, 32)
    cond = torch.randn(1, 64)
    with torch.no_grad():
        full = var(cond, inputs[:1])
        changed = inputs[:1].clone()
        changed[:, 20:] += 1.0  # the inputs of scale 8 (positions 21...)
        assert torch.allclose(var(cond, changed)[:, :21], full[:, :21], atol=1e-5)
        cache, start, parts = torch.zeros(3, 2, 2, 4, 0, 24), 0, []
        for k, s in enumerate(var.scales):
            x = torch.zeros(1, 1, 32) if k == 0 else inputs[:1, start - 1:start - 1 + s * s]
            logits, cache = Step(var)(cond, x, torch.arange(start, start + s * s), cache,
                                      torch.zeros(1))
            parts.append(logits)
            start += s * s
    assert cache.shape[4] == 85
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-5, rtol=1e-4)


def test_bundle_generates_with_onnx_runtime_what_torch_generates(cache, tmp_path):
    from edgert.methods.avde.train import Trained

    path = cached_bundle()
    bundle = Bundle.load(path)
    assert {"gallery.npz", "generator/step/manifest.json"} <= set(bundle.manifest.files)
    for folder in (path, *(path / "generator" / g for g in ("step", "accumulate", "decode"))):
        assert verify(folder)["variants"]["fp32"]["loads"]  # raises on shapes, hashes, parity
    trained = Trained.load(cache / "avde" / "checkpoint.pt")
    config = bundle.manifest.preprocessing["avde"]
    graphs = {g: open_backend(path / p) for g, p in config["generator"].items()}
    ours = Generator(graphs["step"].run, graphs["accumulate"].run, graphs["decode"].run,
                     config["shape"], Sampling(seed=3))
    reference = Generator.from_torch(trained.var, trained.vq, Sampling(seed=3))
    cond = np.random.default_rng(0).normal(size=64).astype(np.float32)
    a, b = ours(cond, every_scale=True), reference(cond, every_scale=True)
    assert len(a.scales) == 4 and a.image.shape == (3, 32, 32)
    np.testing.assert_allclose(a.image, b.image, atol=1e-4)
    copy = shutil.copytree(path, tmp_path / "bundle")
    (copy / "gallery.npz").write_bytes((copy / "gallery.npz").read_bytes() + b"x")
    with pytest.raises(BundleError, match="gallery.npz"):
        Bundle.load(copy)


def test_live_pipeline_retrieves_and_draws_every_image_shown(cache, uid):
    bundle = cached_bundle()
    name, trials = f"avde-{uid}", 4
    streams, onsets, concepts = recordings(name, trials)
    ids_at, image_at = free_endpoint(), free_endpoint()
    pipe = Pipeline.from_yaml(pipelines.find("eeg2image"),
                              overrides(name, ids_at, image_at, bundle))
    replay = Replay(streams, chunk_size=10, speed=4.0)
    outlets = replay.open()
    ids, images = Subscriber(ids_at), Subscriber(image_at)
    pipe.start()
    scores = Inlet(name=f"{name}-scores", processing=(), reconnect=False)
    got_ids, got_images, got_scores = [], [], []
    try:
        for outlet in outlets:
            assert outlet.wait_for_consumers(10.0)
        replay.start()
        deadline = time.monotonic() + 60
        while (len(got_images) < trials or len(got_ids) < trials) and \
                time.monotonic() < deadline and pipe.scheduler.fatal is None:
            for sub, into in ((ids, got_ids), (images, got_images)):
                chunk = sub.pull(0.05)
                if chunk is not None:
                    into.append(chunk)
            chunk = scores.pull(0.0)
            if chunk is not None:
                got_scores.append(chunk.data)
    finally:
        pipe.stop()
        replay.stop()
        ids.close()
        images.close()
        scores.close()
    report = pipe.report()
    assert len(got_ids) == trials and len(got_images) == trials, report["nodes"]
    assert got_ids[0].data.shape == (1, 5) and got_ids[0].info.channels[0] == "rank1"
    strip = decode_png(got_images[0].data[0, 0])
    assert strip.shape == (64, 64 * 4, 3)  # four scales, 32 px drawn at 2x
    stages = [s for s, _, _ in got_images[0].trace if s.startswith("generate:")]
    assert stages == ["generate:scale-1", "generate:scale-2", "generate:scale-4",
                      "generate:scale-8"]
    assert report["nodes"]["generate"]["images"] == trials and report["quarantined"] == {}


def test_evaluate_reports_every_variant_metric_and_scale(tmp_path):
    cfg = Config(**TINY, diffusion_steps=2, judge_steps=5, ddim_steps=2)
    result = evaluate(config=cfg)
    assert set(result["results"]) == set(VARIANTS)
    avde = result["results"]["avde"]
    for key in ("top1", "top5", "two_way", "pixcorr", "ssim", "two_way_identification",
                "attr_mean", "params_generator", "ms_per_image"):
        assert key in avde, key
    assert set(avde["scales"]) == {"1", "2", "4", "8"}
    assert result["results"]["diffusion"]["params_generator"] > 4 * avde["params_generator"]
    assert result["held_out_images"] == 48 and result["pretraining"]["seconds"]["simulated"] > 0
    assert set(result["image_condition"]) == {"avde", "retrieval_only"}
    assert "attr_mean" in result["image_condition"]["avde"]
    spread = result["stage1_seeds"]
    assert set(spread) == {"avde", "no_pretraining", "mse_only"}
    assert all(s["seeds"] == cfg.stage1_seeds and 0 <= s["top1_mean"] <= 1
               for s in spread.values())
    assert set(result["real_data"]["ssvep"]) >= {"pretrained", "untrained", "chance",
                                                 "training_free", "spectrum_probe"}
    paths = figures(result, tmp_path / "eval.json")
    assert [p.name for p in paths] == ["eval.examples.png", "eval.scales.png"]
    json.dumps(result)


@pytest.mark.slow  # 35 s; `edgert bench pipelines` itself is in the default run (test_bench.py)
def test_bench_times_each_scale_on_onnx_runtime_and_on_torch_eager(cache, tmp_path):
    from edgert.benchmarks.pipelines import Config as BenchConfig
    from edgert.benchmarks.pipelines import run_pipelines

    cached_bundle()
    suite = run_pipelines(True, tmp_path, config=BenchConfig(seconds=4.0, repeats=1,
                                                             method_seconds=8.0),
                          paths=[pipelines.find("eeg2image")])
    assert set(suite["results"]) == {"eeg2image", "eeg2image (torch)"}, suite["results"]
    for name, result in suite["results"].items():
        assert "skipped" not in result, result
        stages = result["nodes"]["generate"]["stage_ms"]
        assert set(stages) == {"scale-1", "scale-2", "scale-4", "scale-8"}, name
        assert stages["scale-8"]["count"] >= 2 and stages["scale-8"]["p99_ms"] > 0


@pytest.mark.parametrize("spec, says", [("clip", "open_clip:MODEL:PRETRAINED"),
                                        ("open_clip:ViT-B-32:laion2b_s34b_b79k",
                                         "pip install open_clip_torch")])
def test_another_image_encoder_is_named_with_how_to_get_it(spec, says):
    from edgert.methods.avde.train import train_images

    with pytest.raises(DataError, match=says):
        train_images(simulated(1, 1, 1, 1), TrainConfig(**TINY, image_encoder=spec), None)
