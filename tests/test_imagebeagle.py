"""The imagebeagle job on real photo patches: its parts and one quick cell through the runner."""
import json

import numpy as np

from edgert.methods.imagebeagle.data import patches
from edgert.methods.imagebeagle.model import make_units
from edgert.methods.imagebeagle.search import Counter, beam, knn_graph, random_search
from edgert.runtime.batch import run_batch


def test_patches_come_from_real_photos_and_are_normalised():
    x = patches(size=8, per_photo=20, seed=1)
    assert 250 < len(x) <= 15 * 20 and x.shape[1] == 64
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-6)
    assert np.abs(x.mean(1)).max() < 1e-9 and x.std() > 0


def test_baseline_neurons_are_two_tailed_and_relu_units_one_tailed():
    rng = np.random.default_rng(0)
    e = rng.standard_normal((2000, 8))
    neurons = make_units(5, 8, rng, baseline=2.0, noise=0.0)
    relu = make_units(5, 8, rng, baseline=0.0, noise=0.0)
    assert (neurons.rates(e) < 1.0).mean() > 0.1 and (neurons.rates(e) > 3.0).mean() > 0.1
    assert relu.rates(e).min() == 0.0 and (relu.rates(e) == 0).mean() > 0.3


def test_walk_on_the_graph_climbs_a_smooth_response_faster_than_random():
    rng = np.random.default_rng(1)
    e = rng.standard_normal((3000, 3))
    graph = knn_graph(e, 8)
    response = e[:, 0]
    goal = set(np.argsort(response)[-30:])
    walks = [beam(graph, Counter(lambda i: response[i], 1.0), goal, 1, rng, 3000)
             for _ in range(20)]
    randoms = [random_search(3000, Counter(lambda i: response[i], 1.0), goal, rng, 3000)
               for _ in range(20)]
    assert np.mean(walks) < 0.7 * np.mean(randoms)


def test_quick_cell_through_the_runner(tmp_path):
    cfg = {"patch": 8, "per_photo": 40, "dims": 6, "k": 6, "units": 3, "baseline": 2.0,
           "noise": 0.3, "few": 5, "width": 2, "budget": 300}
    result = run_batch("imagebeagle", [cfg], seeds=1, out=tmp_path, workers=1)
    assert not result["failed"], result["failed"]
    metrics = {k: v["mean"] for k, v in next(iter(result["summary"].values()))["metrics"].items()}
    assert metrics["below_baseline_relu"] == 0.0 < metrics["below_baseline_neurons"]
    assert 0 < metrics["tuning_corr_top_bottom"] <= 1
    assert all(1 <= metrics[f"queries_{e}_{m}"] <= 300 for e in ("top", "bottom")
               for m in ("greedy", "beam", "random"))
    cell = json.loads((tmp_path / "results.json").read_text())["cells"][0]
    assert any(a.endswith("responses.png") for a in cell["artifacts"])
