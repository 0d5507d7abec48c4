"""The tutor_pupil job: the cases' ground truth against known values, the sparse fit on a
known formula, and tiny cells through the runner."""
import json

import numpy as np
import pytest
import torch

from edgert.methods.tutor_pupil.cases import G, Pupil, pendulum, pendulum_period, \
    projectile_range
from edgert.methods.tutor_pupil.models import Learner
from edgert.methods.tutor_pupil.symbolic import stlsq
from edgert.runtime.batch import run_batch


def test_pendulum_and_projectile_truths_match_known_values():
    small = pendulum_period(np.array([0.01]), np.array([1.0]))[0]
    assert small == pytest.approx(2 * np.pi * np.sqrt(1 / G), rel=1e-5)
    ratio = pendulum_period(np.array([np.pi / 2]), np.array([1.0]))[0] / (2 * np.pi / np.sqrt(G))
    assert ratio == pytest.approx(1.18034, abs=1e-4)  # the 90-degree pendulum
    vacuum = 20.0 ** 2 * np.sin(2 * 0.6) / G
    assert projectile_range(20.0, 0.6, 0.0) == pytest.approx(vacuum, rel=1e-5)
    assert projectile_range(20.0, 0.6, 0.02) < 0.8 * vacuum


def test_sparse_fit_finds_the_terms_of_a_known_formula():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 2, 300), rng.uniform(0, 2, 300)
    features = np.stack([a, a ** 2, b, a * b], 1)
    target = 0.7 * a ** 2 - 0.2 * a * b + rng.normal(0, 1e-3, 300)
    coef = stlsq(features, target, threshold=0.05)
    assert coef[0] == 0 and coef[2] == 0
    np.testing.assert_allclose(coef[[1, 3]], [0.7, -0.2], atol=5e-3)


def test_every_learner_starts_as_the_pupil_or_a_constant():
    split = pendulum(64, np.random.default_rng(0))
    x, y = torch.as_tensor(split.x), torch.as_tensor(split.y)
    pupil = Pupil("pendulum")
    tutor, residual = (Learner(k, pupil, x, y, 16) for k in ("tutor", "residual"))
    expected = torch.log(pupil(x))
    for model in (tutor, residual):
        torch.testing.assert_close(model(x)[0], expected)
    assert float(tutor(x)[1].detach().abs().max()) == 0.0


def test_tiny_cells_through_the_runner(tmp_path):
    configs = [{"case": "pendulum", "n_train": 300, "steps": 600},
               {"case": "digits", "steps": 300}]
    result = run_batch("tutor_pupil", configs, seeds=1, out=tmp_path, workers=1)
    assert not result["failed"], result["failed"]
    by_case = {e["config"]["case"]: {k: v["mean"] for k, v in e["metrics"].items()}
               for e in result["summary"].values()}
    p = by_case["pendulum"]
    assert p["err_tutor"] < p["err_pupil"] / 4
    assert p["correction_high"] > 5 * p["correction_low"] and p["correction_rho"] > 0.8
    assert 0.04 < p["series_theta2"] < 0.09, "the amplitude series' leading term"
    d = by_case["digits"]
    assert d["acc_tutor"] > d["acc_pupil"] and d["correction_high"] > d["correction_low"]
    cell = json.loads((tmp_path / "results.json").read_text())["cells"][0]
    assert any(a.endswith("corrections.png") for a in cell["artifacts"])
