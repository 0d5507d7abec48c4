"""CogMoE's parts against what each must do: the simulator and its damage log, the wavelet
pair, lag estimation, the masks, low-rank completion, quality indices, the stage-2 models and
the CORTEX loss, and the live Stage1 node with a sensor missing."""
from dataclasses import replace

import numpy as np
import pytest
import torch
from scipy import signal
from sklearn.metrics import f1_score

from edgert.runtime.node import Misconfigured
from edgert.methods.cogmoe import features as feats
from edgert.methods.cogmoe import recovery
from edgert.methods.cogmoe.evaluate import gaps, stage1_analysis, widening
from edgert.methods.cogmoe.model import EXPERTS, build
from edgert.methods.cogmoe.node import Stage1
from edgert.methods.cogmoe.quality import indices, welch
from edgert.methods.cogmoe.simulate import (MODALITIES, RATES, SEGMENT_S, Degradation, Drive, degrade,
                                     simulate)
from edgert.methods.cogmoe.train import (Dataset, clean_inputs, cortex_loss, dataset,
                                  drive_dataset, windows_of)
from edgert.streams import Chunk, StreamInfo


@pytest.fixture(scope="module")
def drive():
    return simulate(60, seed=3)


def test_drive_is_seeded_each_sensor_at_its_rate_and_load_shows(drive):
    again = simulate(60, seed=3)
    for m in MODALITIES:
        np.testing.assert_array_equal(drive.signals[m], again.signals[m])
        assert len(drive.signals[m]) == pytest.approx(60 * RATES[m], abs=2)
    long = simulate(600, seed=4)
    high = np.repeat(long.load > 0.5, int(RATES["gaze"]))[:len(long.signals["gaze"])]
    pupil = long.signals["gaze"][:, 0]
    open_eye = pupil > 0
    assert pupil[high & open_eye].mean() > pupil[~high & open_eye].mean() + 0.3


def test_degrade_keeps_the_clean_drive_and_logs_what_it_did(drive):
    damaged = degrade(drive, "severe", seed=0)
    assert not np.isnan(drive.signals["ecg"]).any()
    for m in MODALITIES:
        log = damaged.injected[m]
        assert log.shape == (6, 3)
        gaps = np.isnan(damaged.signals[m][:, 0])
        assert gaps.mean() <= log[:, 1].mean() + 1e-9
    assert sum(damaged.injected[m][:, 0].sum() for m in MODALITIES) > 0, "noise injected"
    assert np.array_equal(degrade(drive, "clean", 0).signals["eeg"], drive.signals["eeg"])


def test_a_disconnected_sensor_sends_nothing_for_its_segment_and_nothing_else_changes(drive):
    """Disconnections draw from their own generator: the other damage stays as it was."""
    base = Degradation(noise=0.5, gap=0.3)
    plugged = degrade(drive, base, seed=0)
    unplugged = degrade(drive, replace(base, disconnect=0.5), seed=0)
    for m in MODALITIES:
        cut = unplugged.injected[m][:, 1] == 1.0
        segment = int(SEGMENT_S * RATES[m])
        for k in range(6):
            part = slice(k * segment, (k + 1) * segment)
            if cut[k]:
                assert np.isnan(unplugged.signals[m][part]).all()
            else:
                np.testing.assert_array_equal(unplugged.signals[m][part],
                                              plugged.signals[m][part])
    assert 0 < sum((unplugged.injected[m][:, 1] == 1).sum() for m in MODALITIES) < 24


def test_hold_gives_a_sensor_only_what_its_chunks_have_delivered():
    """As the live `align` node sees it: an EDA sample (32 Hz, chunks of 8) is held from
    when its chunk's last sample is sent, not from its own time."""
    drive = Drive({"eeg": np.zeros((512, 4)), "ecg": np.zeros((1024, 1)),
                   "eda": np.arange(64.0)[:, None], "gaze": np.zeros((120, 3))}, np.zeros(2), 0)
    eda = feats.SENSORS[2][0]
    assert feats.hold(drive, chunk=1)[100, eda] == 12  # plain sample-and-hold: 0.39 s
    held = feats.hold(drive, chunk=8)[:, eda]
    assert (held[:56] == 0).all()  # EDA's first chunk goes with its sample at 7/32 s
    assert held[100] == 7  # EEG's chunk 96-103 arrives at 0.402 s, EDA's second at 0.469 s


def test_unstair_interpolates_between_changes_and_holds_the_last_step():
    steps = np.repeat([0.0, 8.0, 4.0], 8)  # a sensor read as a staircase: changes at 8, 16
    x = np.column_stack([steps, np.arange(24.0), np.full(24, 3.0)])
    out = recovery.unstair(x)
    np.testing.assert_allclose(out[:9, 0], np.arange(9.0))
    np.testing.assert_allclose(out[8:17, 0], 8 - 0.5 * np.arange(9))
    assert (out[16:, 0] == 4).all(), "nothing arrived after the last step: it is held"
    np.testing.assert_array_equal(out[:, 1:], x[:, 1:])


def test_wavelet_transform_inverts_within_its_band():
    t = np.arange(1000) / recovery.GRID_HZ
    x = np.sin(2 * np.pi * 6 * t) + 0.5 * np.sin(2 * np.pi * 17 * t + 1.0)
    back = recovery.icwt(recovery.cwt(x[None]))[0]
    core = slice(150, 850)
    assert np.corrcoef(back[core], x[core])[0, 1] > 0.98
    assert np.std(back[core]) == pytest.approx(np.std(x[core]), rel=0.2)


def test_wavelet_transform_sees_a_level_far_from_zero_go_on_at_the_window_ends():
    """A pupil at 3.8 mm with a small rhythm: with the ends padded with zeros, the step at
    each end made the magnitude there 76 times the middle's."""
    x = 3.8 + 0.01 * np.sin(np.arange(1000) / 7)[None]
    magnitude = np.abs(recovery.cwt(x))[0]
    assert magnitude[:, :5].mean() < 3 * magnitude[:, 400:600].mean()


def test_lag_estimate_takes_the_smallest_of_near_equal_peaks_and_none_without_one():
    rng = np.random.default_rng(0)
    base = np.abs(rng.standard_normal((16, 1000))) * 0.2
    bump = np.zeros(1000)
    bump[400:480] = np.hanning(80) * 5.0  # broad: lags short of the true one correlate too
    anchor = base + bump
    other = np.roll(anchor, 25, axis=-1) + np.abs(rng.standard_normal((16, 1000))) * 0.2
    twice = base + np.roll(bump, 25) + np.roll(bump, -40)  # two near-equal peaks
    noise = np.abs(rng.standard_normal((16, 1000)))
    assert recovery.estimate_lags(anchor, np.stack([other, twice, noise, anchor]), 60) == \
        [25, 25, 0, 0]


def test_stage1_aligns_a_late_sensor_on_a_bump_every_sensor_felt(drive):
    """EEG and ECG share no rhythm; a bump in the road shows in both, so a clock that runs
    0.2 s late is found and taken back."""
    window = feats.hold(drive)[:2560].astype(float)
    bump = np.zeros(len(window))
    bump[1000:1051] = np.hanning(51)
    window += 8 * window.std(0) * bump[:, None]
    eeg = feats.SENSORS[0]
    window[:, eeg] = np.roll(window[:, eeg], 51, axis=0)  # 0.2 s at 256 Hz
    lags = recovery.recover(window, 256.0, feats.SENSORS, feats.ANCHOR).lags
    assert lags[0] == pytest.approx(0.2, abs=0.03)
    assert np.abs(np.delete(lags, 0)).max() <= 0.03


def test_flat_runs_find_a_stopped_sensor_not_a_slow_one():
    x = np.repeat(np.arange(100.0), 8)[:, None]  # 32 Hz held on 256 Hz: short steps
    assert not recovery.flat_runs(x, 256.0).any()
    x[300:400] = x[300]
    found = recovery.flat_runs(x, 256.0)[:, 0]
    assert found[310:400].all() and not found[:290].any()


def test_low_rank_completion_rewrites_only_masked_entries():
    rng = np.random.default_rng(1)
    truth = rng.standard_normal((20, 3)) @ rng.standard_normal((3, 400))
    mask = np.zeros_like(truth, bool)
    mask[5, 100:200] = True
    damaged = np.where(mask, 0.0, truth)
    filled = recovery.low_rank_complete(damaged, mask, rank=3, iterations=10)
    np.testing.assert_array_equal(filled[~mask], truth[~mask])
    assert np.abs(filled[mask] - truth[mask]).mean() < 0.2 * np.abs(truth[mask]).mean()


def test_stage1_marks_a_gap_and_fills_it(drive):
    window = feats.hold(drive)[:2560].astype(float)
    window[1000:1400, feats.SENSORS[0]] = window[999, feats.SENSORS[0]]  # EEG held
    rec = recovery.recover(window, 256.0, feats.SENSORS, feats.ANCHOR)
    eeg = feats.SENSORS[0]
    assert rec.mask[eeg][:, 420:530].all() and not rec.mask[eeg][:, 100:300].any()
    assert np.std(rec.signal[420:530, eeg]) > 0, "the held flat line is replaced"
    assert np.isfinite(rec.power).all()


def test_stage1_follows_a_slow_sensor_s_drift_through_a_gap(drive):
    """A skin-conductance level drifting below the transform's band, 2 s missing: the fill
    follows the drift (0.03 of the signal's spread; 0.13 with the transform's ends padded
    with zeros; 0.24 with the hole first filled with the window's mean, whose step at its
    edges leaked into the band and the slow baseline; a straight line, 0.02)."""
    window = feats.hold(drive)[:2560].astype(float)
    eda = feats.SENSORS[2]
    t = np.arange(2560) / 256.0
    window[:, eda] = (5 + 0.2 * t + 0.3 * np.sin(2 * np.pi * 0.05 * t))[:, None]
    truth = recovery.to_grid(window, 256.0)[:, eda]
    window[1000:1512, eda] = window[999, eda]
    rec = recovery.recover(window, 256.0, feats.SENSORS, feats.ANCHOR)
    gap = rec.mask[eda].any(0)
    assert gap.sum() >= 150
    error = np.sqrt(np.mean((rec.signal[:, eda][gap] - truth[gap]) ** 2))
    assert error < 0.06 * truth.std(), error / truth.std()


def test_stage1_fills_a_gap_that_opens_the_window(drive):
    """No observed sample before the gap: no phase to carry, the fill fades from the mean."""
    window = feats.hold(drive)[:2560].astype(float)
    eeg = feats.SENSORS[0]
    window[:500, eeg] = window[500, eeg]
    rec = recovery.recover(window, 256.0, feats.SENSORS, feats.ANCHOR)
    assert rec.mask[eeg][:, :150].all() and np.isfinite(rec.signal).all()
    assert np.std(rec.signal[:150, eeg]) > 0


def test_stage1_fills_a_gap_near_the_window_start_at_the_sensor_s_level(drive):
    """A pupil far from zero, missing from 0.16 s to 2.7 s: the fill stays near its level
    (0.74 of its spread; with the transform's ends padded with zeros, 15)."""
    window = feats.hold(drive)[:2560].astype(float)
    pupil = feats.SENSORS[3][0]
    t = np.arange(2560) / 256.0
    window[:, pupil] = (3.8 + 0.05 * np.sin(2 * np.pi * 0.3 * t)
                        + 0.02 * np.sin(2 * np.pi * 3 * t))
    truth = recovery.to_grid(window, 256.0)[:, pupil]
    window[40:700, pupil] = window[40, pupil]
    rec = recovery.recover(window, 256.0, feats.SENSORS, feats.ANCHOR)
    gap = rec.mask[pupil]
    assert gap.sum() >= 200
    error = np.sqrt(np.mean((rec.signal[gap, pupil] - truth[gap]) ** 2))
    assert error < 1.5 * truth.std(), error / truth.std()


@pytest.mark.parametrize("n", [2560, 2431, 700, 301])
def test_batched_welch_is_scipy_welch(n):
    x = np.random.default_rng(n).standard_normal((3, n))
    nperseg = min(n, 512)
    f, psd = welch(x, 256.0, nperseg)
    f_ref, psd_ref = signal.welch(x, fs=256.0, nperseg=nperseg, axis=-1)
    np.testing.assert_allclose(f, f_ref)
    np.testing.assert_allclose(psd, psd_ref, rtol=1e-10)


def test_snr_index_falls_with_noise_and_missing_index_reads_gaps(drive):
    window = feats.hold(drive)[:2560].astype(float)
    rng = np.random.default_rng(2)
    scores = []
    for snr_db in (20, 5, -10):
        noisy = window.copy()
        p = noisy[:, feats.SENSORS[1]].var()
        noise = rng.standard_normal((2560, 1)) * np.sqrt(p / 10 ** (snr_db / 10))
        noisy[:, feats.SENSORS[1]] += noise
        scores.append(indices(noisy, 256.0, feats.SENSORS, MODALITIES)[1, 0])
    assert scores[0] > scores[1] > scores[2]
    gap = window.copy()
    gap[:1280, feats.SENSORS[2]] = gap[0, feats.SENSORS[2]]
    assert indices(gap, 256.0, feats.SENSORS, MODALITIES)[2, 1] == pytest.approx(0.5, abs=0.02)


def test_overlapping_windows_take_the_damage_of_the_segment_holding_their_middle(drive):
    """Training windows 5 s apart: twice the windows, every other one as the 10-s hop has
    it, each labelled with the damage of the segment its middle falls in."""
    damaged = degrade(drive, "severe", seed=0)
    apart = windows_of(damaged, clean_inputs(drive), 2)
    half = windows_of(damaged, clean_inputs(drive, 5.0), 2, hop_s=5.0)
    assert (len(apart), len(half)) == (6, 11)
    assert len(half.clean) == len(half)
    np.testing.assert_allclose(half.x[::2], apart.x, atol=1e-5)
    np.testing.assert_array_equal(half.y[::2], apart.y)
    noise = np.array([[damaged.injected[m][int((5 * k + 5) // SEGMENT_S), 0] for m in MODALITIES]
                      for k in range(11)])
    np.testing.assert_array_equal(half.noise, noise)
    assert not np.array_equal(noise[1::2], noise[:-1:2]), "some middles cross a segment"


def test_drives_built_in_parallel_come_back_in_seed_order():
    """Three drives on a pool of two workers finish in any order; the dataset holds them in
    the order asked, each as the drive built alone."""
    built = dataset([3, 1, 2], ["clean", "severe"], 20)
    alone = [drive_dataset(seed, ["clean", "severe"], 20, feats.WINDOW_S) for seed in (3, 1, 2)]
    np.testing.assert_array_equal(built.x, np.concatenate([d.x for d in alone]))
    np.testing.assert_array_equal(built.missing, np.concatenate([d.missing for d in alone]))
    assert not np.array_equal(alone[0].x, alone[1].x)


def test_gaps_resample_whole_drives_and_match_the_pooled_f1():
    """A baseline wrong on every severe window trails by 1 there and nowhere else; one wrong
    only on half the drives' severe windows trails by its pooled F1, with an interval that
    spans the drives' disagreement."""
    rng = np.random.default_rng(0)
    drive = np.repeat(np.arange(100, 106), 30)
    level = np.tile(np.repeat([0, 1, 2], 10), 6)
    y = rng.integers(0, 2, len(drive))
    severe = level == 2
    half = np.where(severe & (drive < 103), 1 - y, y).astype(float)
    g = gaps(y, {"cogmoe": y.astype(float), "all": np.where(severe, 1 - y, y).astype(float),
                 "half": half}, level, drive)
    assert set(g) == {"all", "half"}
    assert g["all"]["clean"] == g["all"]["moderate"] == {"f1": 0.0, "ci90": [0.0, 0.0]}
    assert g["all"]["severe"]["f1"] == 1.0
    point = 1 - f1_score(y[severe], half[severe] > 0.5)
    lo, hi = g["half"]["severe"]["ci90"]
    assert g["half"]["severe"]["f1"] == pytest.approx(point, abs=1e-4)
    assert 0 <= lo < point < hi <= 1

def test_widening_is_the_lead_over_the_lead_on_clean_drives():
    """A baseline wrong on half the moderate windows and every severe one: CogMoE's lead
    widens by its F1 loss at moderate and by 1 at severe; one wrong on every window of some
    drives at every level leads alike everywhere, so it widens by nothing, however wide its
    own intervals."""
    rng = np.random.default_rng(1)
    drive = np.repeat(np.arange(100, 108), 30)
    level = np.tile(np.repeat([0, 1, 2], 10), 8)
    y = rng.integers(0, 2, len(drive))
    flip = ((level == 2) | ((level == 1) & (rng.random(len(y)) < 0.5)))
    probs = {"cogmoe": y.astype(float), "worse": np.where(flip, 1 - y, y).astype(float),
             "even": np.where(drive < 103, 1 - y, y).astype(float)}
    g, w = gaps(y, probs, level, drive), widening(y, probs, level, drive)
    assert set(w["worse"]) == {"moderate", "severe"}
    assert w["worse"]["moderate"]["f1"] == pytest.approx(g["worse"]["moderate"]["f1"], abs=1e-4)
    assert w["worse"]["severe"] == {"f1": 1.0, "ci90": [1.0, 1.0]}
    assert g["even"]["clean"]["ci90"][1] - g["even"]["clean"]["ci90"][0] > 0.1
    for lv in ("moderate", "severe"):
        lo, hi = w["even"][lv]["ci90"]
        assert lo <= w["even"][lv]["f1"] <= hi
        assert hi - lo < g["even"][lv]["ci90"][1] - g["even"][lv]["ci90"][0]


def test_stage1_analysis_keeps_whole_segment_disconnections_out_of_partial_holes():
    """Two moderate windows: one with a sensor gone for its segment (errors 9 / 8), one with
    a partial hole (1 / 2); a severe window with nothing masked (NaN) counts nowhere."""
    n, z = 3, np.zeros((3, 4))
    missing = np.array([[1.0, 0, 0, 0], [0.2, 0, 0, 0], [0, 0, 0, 0]])
    test = Dataset(np.zeros((n, 1, 1)), np.zeros((n, 1, 1)), np.zeros(n), np.array([1, 1, 2]),
                   z, missing, z, np.zeros((n, 4, 3)),
                   np.array([[9.0, 8.0], [1.0, 2.0], [np.nan, np.nan]]), z, np.zeros(n))
    out = stage1_analysis(test)
    assert out["moderate"]["stage1_rmse"] == 5.0 and out["moderate"]["linear_rmse"] == 5.0
    assert out["moderate"]["in_partial_holes"] == {"stage1_rmse": 1.0, "linear_rmse": 2.0}
    assert out["severe"]["stage1_rmse"] is None


@pytest.mark.parametrize("name", ["cogmoe", "modmoe", "cogbasic", "early_fusion"])
def test_stage2_models_train_on_the_cortex_loss(name):
    torch.manual_seed(0)
    model = build(name, feats.FEATURES, feats.QUALITY, 4, 20)
    x = torch.randn(6, 80, feats.FEATURES + feats.QUALITY)
    loss = cortex_loss(model, x, torch.randn_like(x), torch.tensor([0, 1] * 3),
                       torch.ones(6, 4), balance=0.1)
    loss.backward()
    assert torch.isfinite(loss)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


def test_cortex_loss_teaches_the_gate_the_expert_each_condition_calls_for():
    """Sensor 0 noisy (its features off the clean ones), sensor 1 masked, 2-3 clean, each
    sensor's quality saying so: after training, the gate weights on each sensor's tokens are
    highest for the expert of its condition."""
    torch.manual_seed(0)
    model = build("cogmoe", feats.FEATURES, feats.QUALITY, 4, 5)
    clean = torch.randn(64, 20, feats.FEATURES + feats.QUALITY)
    clean[..., feats.FEATURES - 1] = 0  # nothing masked
    noisy = torch.zeros(64, 4)
    noisy[:, 0] = 1
    x = clean.clone()
    x[:, :5, :feats.FEATURES - 1] += 2 * torch.randn(64, 5, feats.FEATURES - 1)
    x[:, 5:10, feats.FEATURES - 1] = 1.0
    x[..., feats.FEATURES:] = torch.tensor([1.0, -1.0, 0.0, 0.0]).repeat_interleave(5)[:, None]
    y = torch.randint(0, 2, (64,))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(150):
        loss = cortex_loss(model, x, clean, y, noisy, balance=0.01)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        gates = model.parts(x)["gates"].view(64, 4, 5, len(EXPERTS)).mean((0, 2))
    expected = ["noise_robust", "recovery", "clean", "clean"]
    assert [EXPERTS[i] for i in gates.argmax(-1)] == expected, gates


def test_cogmoe_output_is_load_probabilities_and_gate_weights():
    model = build("cogmoe", feats.FEATURES, feats.QUALITY, 4, 20).eval()
    out = model(torch.randn(3, 80, feats.FEATURES + feats.QUALITY))
    assert out.shape == (3, 2 + len(EXPERTS) * 5)
    torch.testing.assert_close(out[:, :2].sum(1), torch.ones(3))
    torch.testing.assert_close(out[:, 2:5].sum(1), torch.ones(3))
    torch.testing.assert_close(out[:, 5:].view(3, 4, 3).sum(-1), torch.ones(3, 4))


def test_gate_sees_quality():
    torch.manual_seed(1)
    model = build("cogmoe", feats.FEATURES, feats.QUALITY, 4, 20).eval()
    x = torch.randn(1, 80, feats.FEATURES + feats.QUALITY)
    other = x.clone()
    other[..., feats.FEATURES:] += 3.0
    assert not torch.allclose(model(x)[:, 2:], model(other)[:, 2:])


def test_a_sensor_that_sent_nothing_is_left_out_of_the_estimate():
    """Sensor 2's tokens all masked: whatever stage 1 filled there does not move the load
    estimate (no token attends to them, the readout skips them); half masked, it does."""
    torch.manual_seed(0)
    model = build("cogmoe", feats.FEATURES, feats.QUALITY, 4, 5).eval()
    x = torch.randn(2, 20, feats.FEATURES + feats.QUALITY)
    x[:, 10:15, feats.FEATURES - 1] = 1.0
    other = x.clone()
    other[:, 10:15, :feats.FEATURES - 1] += 5 * torch.randn(2, 5, feats.FEATURES - 1)
    with torch.no_grad():
        torch.testing.assert_close(model.parts(x)["logits"], model.parts(other)["logits"])
        x[:, 10:15, feats.FEATURES - 1] = other[:, 10:15, feats.FEATURES - 1] = 0.5
        assert not torch.allclose(model.parts(x)["logits"], model.parts(other)["logits"])


def test_training_leaves_one_sensor_out_of_a_share_of_windows():
    torch.manual_seed(0)
    model = build("cogmoe", feats.FEATURES, feats.QUALITY, 4, 5)
    x = torch.zeros(4000, 20, feats.FEATURES + feats.QUALITY)
    out = model.train().left_out(x).view(4000, 4, 5) < 0
    whole = out.all(-1)
    assert (out.any(-1) == whole).all() and whole.sum(1).max() == 1
    assert abs(whole.any(1).float().mean() - model.sensor_drop) < 0.03
    assert abs(whole.float().mean(0) - model.sensor_drop / 4).max() < 0.03
    assert not (model.eval().left_out(x) < 0).any()


def test_readout_learns_to_discount_a_sensor_whose_quality_is_poor():
    """Sensor 0's features are noise and its quality says so; the others carry the label.
    After training, the readout weighs sensor 0's tokens below the others'; an untrained
    model weighs every token alike."""
    torch.manual_seed(0)
    model = build("cogmoe", feats.FEATURES, feats.QUALITY, 4, 5)
    y = torch.randint(0, 2, (128,))
    x = 0.5 * torch.randn(128, 20, feats.FEATURES + feats.QUALITY)
    x[:, 5:, 0] += 2.0 * y[:, None] - 1.0
    x[..., feats.FEATURES:] = 1.0
    x[:, :5, feats.FEATURES:] = 0.1
    x[:, :5, :feats.FEATURES] = 3 * torch.randn(128, 5, feats.FEATURES)

    def weights() -> torch.Tensor:
        with torch.no_grad():
            w = torch.softmax(model.trust(x[..., feats.FEATURES:]), 1)
        return w.view(128, 4, 5).sum(-1).mean(0)

    torch.testing.assert_close(weights(), torch.full((4,), 0.25))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(150):
        loss = cortex_loss(model, x, x, y, torch.zeros(128, 4), balance=0.01)
        opt.zero_grad()
        loss.backward()
        opt.step()
    w = weights()
    assert w[0] < 0.85 * w[1:].min(), w


def _aligned_chunk(drive, drop: str | None = None) -> Chunk:
    window = feats.hold(drive)[:2560].astype(np.float32)
    keep = [i for i, c in enumerate(feats.ALIGNED_CHANNELS) if not (drop and
                                                                    c.startswith(drop))]
    info = StreamInfo(name="car", type="EEG", rate=256.0,
                      channels=tuple(feats.ALIGNED_CHANNELS[i] for i in keep))
    return Chunk(window[:, keep], np.arange(2560) / 256.0, info)


def test_stage1_node_fills_a_sensor_that_never_connected(drive):
    node = Stage1("stage1", Stage1.Params())
    node.start()
    full = node.process({"in": _aligned_chunk(drive)})
    missing = node.process({"in": _aligned_chunk(drive, drop="gaze")})
    tokens = len(feats.SENSORS) * int(feats.WINDOW_S / feats.STEP_S)
    assert full["out"].data.shape == missing["out"].data.shape == (tokens, 16)
    quality = missing["quality"].data.reshape(4, 3)
    assert quality[3, 1] == pytest.approx(0.0, abs=0.01), "gaze reads as missing"
    assert node.stats()["windows_missing_sensor"]["gaze"] == 1
    window = node._complete(_aligned_chunk(drive))
    node.stop()
    alone = feats.window_input(window, 256.0)  # the quality indices in this thread
    np.testing.assert_array_equal(full["out"].data, alone[0])
    np.testing.assert_array_equal(full["quality"].data[0], alone[1].astype(np.float32).ravel())


def test_stage1_node_names_a_wrong_stream():
    node = Stage1("stage1", Stage1.Params())
    node.start()
    info = StreamInfo(name="raw-eeg", type="EEG", channels=("Fz", "Cz"), rate=256.0)
    with pytest.raises(Misconfigured, match="'raw-eeg'.*align"):
        node.check("in", info)
