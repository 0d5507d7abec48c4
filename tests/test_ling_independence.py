"""The ling_independence job: its simulators, the LiNG test's exactness and power, the test
inside PC, and one tiny cell through the runner."""
import json

import numpy as np
import pytest

from edgert.methods.ling_independence.data import pair, random_dag, sample_sem, standardized
from edgert.methods.ling_independence.discovery import pc_graph, shd, skeleton_shd, true_cpdag
from edgert.methods.ling_independence.ling import (LingCIT, standardize, gaussian_gram, ling_test,
                                            parts, permutations)
from edgert.runtime.batch import run_batch


@pytest.mark.parametrize("noise", ["uniform", "laplace", "exponential", "student_t"])
def test_noise_isstandardized_and_non_gaussian(noise):
    v = standardized(noise, 200_000, np.random.default_rng(0), df=5.0)
    assert abs(v.mean()) < 0.02 and abs(v.var() - 1) < 0.05
    excess_kurtosis = np.mean(v ** 4) - 3
    assert abs(excess_kurtosis) > 0.5 or abs(np.mean(v ** 3)) > 0.5


def test_random_dag_is_acyclic_and_the_sem_solves_x_equals_xw_plus_e():
    w = random_dag(6, 0.6, np.random.default_rng(1))
    assert np.all(np.linalg.matrix_power((w != 0).astype(int), 6) == 0) and (w != 0).sum() > 3
    x = sample_sem(w, 50, "laplace", np.random.default_rng(2))
    e = standardized("laplace", (50, 6), np.random.default_rng(2))
    np.testing.assert_allclose(x - x @ w, e, atol=1e-9)


def test_parts_under_a_permutation_match_the_statistic_on_permuted_data():
    rng = np.random.default_rng(3)
    x, y = pair("exponential", 30, 0.5, rng)
    perms = permutations(30, 4, rng)
    assert np.array_equal(perms[0], np.arange(30)) and not np.array_equal(perms[2], perms[0])
    stats = parts(x, y, perms)
    xs, yp = standardize(x), standardize(y[perms[2]])
    assert stats["mean_y|x"][2] == pytest.approx(yp @ gaussian_gram(xs) @ yp)
    assert stats["mean_x|y"][2] == pytest.approx(xs @ gaussian_gram(yp) @ xs)
    s = xs ** 2 - np.mean(xs ** 2)
    assert stats["variance_x|y"][2] == pytest.approx(s @ gaussian_gram(yp) @ s)


def test_ling_is_calibrated_under_independence_and_detects_a_weak_linear_effect():
    rng = np.random.default_rng(4)
    null = [ling_test(*pair("student_t", 20, 0.0, rng), 39, rng) for _ in range(300)]
    assert 0.02 <= np.mean(np.array(null) <= 0.05) <= 0.09
    assert min(null) == pytest.approx(1 / 40) and max(null) == 1.0
    alternative = [ling_test(*pair("laplace", 80, 0.5, rng), 39, rng) for _ in range(30)]
    assert np.mean(np.array(alternative) <= 0.05) > 0.7


def test_conditional_ling_residualizes_on_the_conditioning_set():
    rng = np.random.default_rng(5)
    x = standardized("uniform", 300, rng)
    z = x + 0.5 * standardized("uniform", 300, rng)
    y = z + 0.5 * standardized("uniform", 300, rng)
    test = LingCIT(np.column_stack([x, z, y]), permutations=99, seed=0)
    assert test(0, 2, []) <= 0.01
    assert test(0, 2, [1]) > 0.01


def test_pc_with_ling_recovers_a_collider_and_shd_counts_the_errors():
    w = np.zeros((3, 3))
    w[0, 1], w[2, 1] = 1.0, -0.8  # X1 -> X2 <- X3
    truth = true_cpdag(w)
    assert shd(truth, truth) == 0 == skeleton_shd(truth, truth)
    data = sample_sem(w, 300, "exponential", np.random.default_rng(6))
    est = pc_graph(data, "ling", 0.05, permutations=99, seed=1)
    assert shd(truth, est) == 0
    chain = np.zeros((3, 3))
    chain[0, 1], chain[1, 2] = 1.0, 1.0  # same skeleton, no collider: undirected CPDAG
    assert skeleton_shd(true_cpdag(chain), est) == 0 and shd(true_cpdag(chain), est) == 2


def test_tiny_cell_through_the_runner(tmp_path):
    cfg = {"noise": "laplace", "ns": [20, 40], "reps": 3, "permutations": 19, "dags": 1,
           "dag_nodes": 3, "dag_n": 60}
    result = run_batch("ling_independence", [cfg], seeds=1, out=tmp_path,
                       workers=1)
    assert not result["failed"], result["failed"]
    metrics = {k: v["mean"] for k, v in next(iter(result["summary"].values()))["metrics"].items()}
    for hypothesis in ("power", "type1"):
        for t in ("ling", "ling_mean", "hsic", "kci"):
            rates = [metrics[f"{hypothesis}.{t}.n{n}"] for n in (20, 40)]
            assert all(r in (0, 1 / 3, 2 / 3, 1) for r in rates)
            assert metrics[f"{hypothesis}.{t}"] == pytest.approx(np.mean(rates))
    assert all(0 <= metrics[f"shd.{t}"] <= 3 for t in ("ling", "kci", "fisherz"))
    cell = json.loads((tmp_path / "results.json").read_text())["cells"][0]
    names = {a.rsplit("/", 1)[-1] for a in cell["artifacts"]}
    assert {"power_type1.png", "rejection_rates.csv", "shd.csv"} <= names
