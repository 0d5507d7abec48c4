"""The lore job: the oracle, the IRSVT pieces, dimension recovery on a small space, the cblearn
peer (when set up) and one tiny cell through the runner."""
import json
import logging

import numpy as np
import pytest

from edgert.methods.lore.data import ask, distances, space
from edgert.methods.lore.embed import accuracy, gradient, gram_of, irsvt, loss, threshold
from edgert.methods.lore.fit import Settings, fit
from edgert.methods.lore.job import run
from edgert.methods.lore.peer import cblearn_embeddings, peer_python
from edgert.runtime.batch import run_batch

TINY = {"n": 16, "dim": 2, "budget": 3.0, "test": 300, "path": [0.6, 0.3, 0.1], "iters": 80,
        "large_dim": 4}


def test_oracle_answers_follow_the_space_up_to_its_noise():
    rng = np.random.default_rng(0)
    x = space(30, 3, rng)
    d = distances(x)
    assert np.mean(d[np.triu_indices(30, 1)]) == pytest.approx(1.0)
    truth = lambda t: d[t[:, 0], t[:, 1]] < d[t[:, 0], t[:, 2]]  # noqa: E731
    assert truth(ask(x, 500, "flip", 1e-9, rng)).all()
    assert np.mean(truth(ask(x, 4000, "flip", 0.2, rng))) == pytest.approx(0.8, abs=0.03)
    noisy = ask(x, 4000, "logistic", 0.1, rng)
    gap = np.abs(d[noisy[:, 0], noisy[:, 2]] - d[noisy[:, 0], noisy[:, 1]])
    right = truth(noisy)
    assert right[gap > 0.5].mean() > 0.95 > right[gap < 0.05].mean() > 0.5


def test_gradient_matches_finite_differences_and_thresholding_keeps_k_psd():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((7, 7))
    k, e = a @ a.T, a + a.T
    t = np.array([rng.choice(7, 3, replace=False) for _ in range(30)])
    h = 1e-6
    numeric = (loss(k + h * e, t) - loss(k - h * e, t)) / (2 * h)
    assert np.sum(gradient(k, t) * e) == pytest.approx(numeric, rel=1e-5)
    cut = np.linspace(0.5, 3.0, 7)
    out, kept = threshold(e, cut)
    vals = np.sort(np.linalg.eigvalsh(e))[::-1]
    np.testing.assert_allclose(kept, np.maximum(vals - cut, 0), atol=1e-9)
    assert np.linalg.eigvalsh(out).min() > -1e-9


def test_lore_recovers_the_dimension_the_nuclear_norm_overshoots():
    settings = Settings(p=0.5, eps=1.0, iters=200, path=[0.8, 0.4, 0.2, 0.1, 0.05], val=0.2)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        x = space(30, 2, rng)
        train, test = ask(x, 600, "logistic", 0.05, rng), ask(x, 1000, "logistic", 0.05, rng)
        nuclear, lore, _, _ = fit(train, 30, settings, rng)
        assert lore.rank(0.02) == 2 < nuclear.rank(0.02)
        assert accuracy(lore.gram, test) > 0.85
        assert accuracy(lore.gram, test) >= accuracy(nuclear.gram, test) - 0.01


def test_nuclear_norm_is_convex_the_same_answer_from_any_start():
    rng = np.random.default_rng(4)
    x = space(20, 2, rng)
    train = ask(x, 300, "logistic", 0.05, rng)
    start = gram_of(rng.standard_normal((20, 5)))
    a = irsvt(train, 20, 0.005, 1.0, 0.0, 3000, tol=1e-9)
    b = irsvt(train, 20, 0.005, 1.0, 0.0, 3000, start=start, tol=1e-9)
    assert np.abs(a.gram - b.gram).max() < 1e-2 * np.abs(a.gram).max()


def test_missing_peer_skips_cblearn_with_a_hint(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("EDGERT_CACHE", str(tmp_path / "empty"))
    with caplog.at_level(logging.WARNING):
        metrics = run(TINY, 0, tmp_path)
    assert "setup_peer.sh" in caplog.text
    assert not any(k.startswith(("soe", "tste")) for k in metrics)
    assert metrics["true_dim"] == 2 and 1 <= metrics["lore.rank"] <= 16


@pytest.mark.skipif(peer_python() is None,
                    reason="cblearn peer venv missing: bash methods/lore/setup_peer.sh")
def test_cblearn_peer_scores_match_ours():
    rng = np.random.default_rng(3)
    x = space(20, 2, rng)
    train, test = ask(x, 600, "logistic", 0.05, rng), ask(x, 500, "logistic", 0.05, rng)
    runs = {"soe_true": ("soe", 2), "tste_large": ("tste", 5)}
    embeddings, scores = cblearn_embeddings(train, test, 20, runs, seed=0)
    assert embeddings["soe_true"].shape == (20, 2) and embeddings["tste_large"].shape == (20, 5)
    for name, e in embeddings.items():
        assert accuracy(gram_of(e), test) == pytest.approx(scores[name])
        assert scores[name] > 0.75


def test_tiny_cell_through_the_runner(tmp_path):
    result = run_batch("lore", [TINY], seeds=1, out=tmp_path, workers=1)
    assert not result["failed"], result["failed"]
    metrics = result["cells"][0]["metrics"]
    assert metrics["true_dim"] == 2 and metrics["lore.rank"] >= 1
    assert metrics["lore.rank_correct"] == float(metrics["lore.rank"] == 2)
    for name in ("lore", "nuclear", "oracle"):
        assert 0.6 < metrics[f"{name}.accuracy"] <= 1
    cblearn = {f"{m}.accuracy" for m in ("soe_true", "soe_large", "tste_true", "tste_large")}
    assert cblearn <= metrics.keys() if peer_python() else not cblearn & metrics.keys()
    cell = json.loads((tmp_path / "results.json").read_text())["cells"][0]
    assert any(a.endswith("spectra_accuracy.png") for a in cell["artifacts"])
    assert any(a.endswith("spectra.csv") for a in cell["artifacts"])
