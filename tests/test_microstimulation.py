"""The microstimulation job on real digits: its parts, and two tiny cells (with and without
the spatial loss) through the runner."""
import json

import numpy as np
import torch

from edgert.methods.microstimulation.data import augment, digits
from edgert.methods.microstimulation.model import SpatialLoss, sheet_positions
from edgert.methods.microstimulation.stimulate import choices, readout, shift, stimulate
from edgert.methods.microstimulation.topography import (
    match_sites,
    neighbour_pairs,
    selectivity,
    shuffled_smoothness,
    smoothed,
    smoothness,
)
from edgert.runtime.batch import run_batch


def _smooth_field(side: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, side * side) random maps blurred on the sheet: nearby units alike."""
    from scipy.ndimage import gaussian_filter

    z = rng.standard_normal((n, side, side))
    return np.stack([gaussian_filter(m, 2.0, mode="wrap") for m in z]).reshape(n, -1)


def test_digits_are_real_upsampled_and_augmentation_keeps_them_digits():
    x, y, xt, _ = digits(seed=0)
    assert x.shape[1:] == (1, 16, 16) and len(x) + len(xt) == 1797
    assert 0 <= x.min() and x.max() <= 1 and set(y.tolist()) == set(range(10))
    moved = augment(x[:64], torch.Generator().manual_seed(0))
    assert moved.shape == x[:64].shape and not torch.allclose(moved, x[:64])
    corr = np.corrcoef(moved.flatten(1).numpy(), x[:64].flatten(1).numpy())[:64, 64:]
    assert np.diag(corr).mean() > 0.6


def test_spatial_loss_prefers_smooth_maps_to_shuffled_ones():
    rng = np.random.default_rng(0)
    loss = SpatialLoss(sheet_positions(8))
    a = torch.from_numpy(_smooth_field(8, 200, rng)).float()
    shuffled = a[:, torch.from_numpy(rng.permutation(64))]
    assert loss(a) < 0.7 < loss(shuffled)


def test_smoothness_index_tells_a_map_from_its_shuffle():
    rng = np.random.default_rng(1)
    maps = _smooth_field(10, 5, rng).T
    profiles = (maps - maps.mean(0)) / maps.std(0)  # no digit favoured everywhere
    pairs = neighbour_pairs(sheet_positions(10).numpy())
    assert len(pairs) == 2 * 9 * 10 + 2 * 9 * 9
    assert smoothness(profiles, pairs) > 0.5
    assert abs(shuffled_smoothness(profiles, pairs, rng)) < 0.1


def test_selectivity_is_positive_for_the_preferred_category_and_zero_for_silent_units():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 300)
    a = np.stack([(y == 1) + 0.1 * rng.random(300), np.zeros(300)], 1)
    d = selectivity(a, y, 3)
    assert d[0].argmax() == 1 and d[0, 1] > 2 and (d[0, [0, 2]] < 0).all()
    assert (d[1] == 0).all()


def test_stimulation_peaks_at_the_site_and_spreads_with_current():
    pos = sheet_positions(16).numpy()
    site = 8 * 16 + 8
    a = np.zeros((1, 256))
    weak, strong = (stimulate(a, pos, site, i, sigma0=1.0, scale=0.5)[0] for i in (1.0, 4.0))
    assert weak.argmax() == site and weak[site] == 0.5 and strong[site] == 2.0
    assert (strong > 0.5 * strong.max()).sum() > 2 * (weak > 0.5 * weak.max()).sum()


def test_matching_finds_the_same_site_on_a_shifted_copy_of_the_map():
    local = smoothed(_smooth_field(12, 4, np.random.default_rng(3)).T, 12, 1.0)
    shifted = np.roll(local.reshape(12, 12, 4), (3, -2), axis=(0, 1)).reshape(144, 4)
    sites = np.array([5 * 12 + 5, 7 * 12 + 4, 6 * 12 + 8])
    mapped, r = match_sites(local, sites, shifted)
    np.testing.assert_array_equal(mapped, sites + 3 * 12 - 2)
    np.testing.assert_allclose(r, 1.0)


def test_stimulating_units_that_vote_for_a_category_shifts_choices_toward_it():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 400)
    a = np.abs(rng.normal(size=(400, 64))) + np.outer(y == 1, np.arange(64) < 8)
    observer = readout(a, y, seed=0)
    pos = sheet_positions(8).numpy()
    stimulated = stimulate(a, pos, 0, 2.0, sigma0=1.0, scale=1.0)  # unit 0: a "1" unit
    assert shift(observer, a, stimulated)[1] > 0.1
    sampled = choices(observer, stimulated, rng, 20) - choices(observer, a, rng, 20)
    assert abs(sampled[1] - shift(observer, a, stimulated)[1]) < 0.03


def test_tiny_cells_through_the_runner_with_and_without_the_spatial_loss(tmp_path):
    cfg = {"side": 8, "width": 4, "epochs": 2, "spatial_weight": 1.0, "current": 6.0,
           "sigma0": 1.0, "electrode_sigma": 1.0, "random_sites": 6, "trials": 1}
    flat = cfg | {"spatial_weight": 0.0}
    result = run_batch("microstimulation", [cfg, flat], seeds=1, out=tmp_path,
                       workers=1)
    assert not result["failed"], result["failed"]
    m, f = ({k: v["mean"] for k, v in entry["metrics"].items()}
            for entry in sorted(result["summary"].values(),
                                key=lambda e: -e["config"]["spatial_weight"]))
    assert m["accuracy"] > 0.5 and m["accuracy_animal"] > 0.5
    assert m["patch_smoothness"] > m["patch_smoothness_shuffled"] + 0.15
    assert m["patch_smoothness"] > 0.15 > f["patch_smoothness"]
    assert m["bias_patch_model"] > 0.02
    assert -1 <= m["predicted_observed_r"] <= 1 and -1 <= m["bias_random"] <= 1
    cell = json.loads((tmp_path / "results.json").read_text())["cells"][0]
    for name in ("selectivity_maps.png", "predicted_vs_observed.png", "sites.csv"):
        assert any(a.endswith(name) for a in cell["artifacts"])
