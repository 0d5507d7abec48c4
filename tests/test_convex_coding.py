"""The convex_coding job: the objective in Q, the convex programs against closed form and
gradient descent, identifiability and modularity of the affine code, and one tiny cell
through the runner."""
import csv
import json

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from edgert.methods.convex_coding.data import box, range_kept, range_lost, tuning_directions
from edgert.methods.convex_coding.descent import descend
from edgert.methods.convex_coding.factor import eig_factor, symnmf, tightness
from edgert.methods.convex_coding.job import Config, affine_code
from edgert.methods.convex_coding.measures import matched_correlation, modularity
from edgert.methods.convex_coding.problem import linear_closed_form, objective, solve_free
from edgert.runtime.batch import run_batch


@pytest.fixture(autouse=True)
def one_blas_thread():
    with threadpool_limits(1):
        yield


def test_objective_in_q_is_the_cost_with_the_best_affine_readout():
    rng = np.random.default_rng(0)
    x, z = rng.standard_normal((2, 12)), rng.standard_normal((4, 12))
    gamma, energy = 0.3, 0.2
    # ridge readout with a free bias: centre, then W = Xc Zc^T (Zc Zc^T + gamma I)^-1
    xc, zc = x - x.mean(1, keepdims=True), z - z.mean(1, keepdims=True)
    w = xc @ zc.T @ np.linalg.inv(zc @ zc.T + gamma * np.eye(4))
    direct = ((xc - w @ zc) ** 2).sum() + gamma * (w ** 2).sum() + energy * (z ** 2).sum()
    assert objective(z.T @ z, x, gamma, energy) == pytest.approx(direct / 12, rel=1e-9)


def test_linear_program_matches_the_closed_form_with_both_solvers():
    x = box(2, 12, np.random.default_rng(1))
    exact = linear_closed_form(x, 0.1, 0.1)
    for solver in ("CLARABEL", "SCS"):
        q = solve_free(x, 0.1, 0.1, nonneg=False, solver=solver)
        assert np.linalg.norm(q - exact) / np.linalg.norm(exact) < 1e-3
    z = eig_factor(exact)
    assert len(z) == 2 and tightness(z, exact) < 1e-9


def test_nonnegative_program_bounds_descent_and_factorises_nearly_tightly():
    x = box(2, 12, np.random.default_rng(2))
    q = solve_free(x, 0.1, 0.1, nonneg=True)
    assert q.min() > -1e-6
    bound = objective(q, x, 0.1, 0.1)
    assert bound > objective(linear_closed_form(x, 0.1, 0.1), x, 0.1, 0.1)
    for start in range(2):
        z = descend(x, 0.1, 0.1, 6, True, start, 600, 0.03)
        assert z.min() >= 0 and objective(z.T @ z, x, 0.1, 0.1) >= bound - 1e-6
    z = symnmf(q, 6, np.random.default_rng(0))
    assert z.min() >= 0 and tightness(z, q) < 0.1


def test_tunings_identifiable_when_source_directions_differ_not_when_collinear():
    rng = np.random.default_rng(3)
    truth = box(2, 150, rng)
    cfg = Config(energy=1.0)

    def recovered(angle: float) -> float:
        return matched_correlation(affine_code(tuning_directions(angle) @ truth, cfg, rng)[0],
                                   truth)

    assert recovered(90.0) > 0.95 > 0.6 > recovered(1.0)


def test_losing_the_range_mixes_the_code_keeping_it_does_not():
    rng = np.random.default_rng(4)
    u = box(2, 150, rng)
    kept, lost = range_kept(u, 0.8, rng), range_lost(u, 0.8)
    assert np.corrcoef(kept)[0, 1] > 0.6 and np.corrcoef(lost)[0, 1] > 0.7
    code = {name: affine_code(x, Config(), rng) for name, x in (("kept", kept), ("lost", lost))}
    assert all(tight < 0.05 for _, tight in code.values())
    assert modularity(code["kept"][0], kept) > 0.85 > 0.75 > modularity(code["lost"][0], lost)


def test_modularity_index_and_matching_on_known_codes():
    x = box(2, 50, np.random.default_rng(5))
    x /= x.std(1, keepdims=True)
    modular = np.vstack([x[0] + 1, 2 - x[1]])
    assert modularity(modular, x) == pytest.approx(1.0)
    assert modularity(np.vstack([x[0] + x[1], x[0] - x[1] + 5]), x) == pytest.approx(0.0)
    assert matched_correlation(modular[::-1], x) == pytest.approx(1.0)
    assert matched_correlation(modular[:1], x) == pytest.approx(0.5)


def test_quick_cell_through_the_runner(tmp_path):
    cfg = {"stimuli": 10, "sweep_stimuli": 40, "units": 4, "starts": 2, "steps": 300,
           "angles": [90.0, 1.0], "correlations": [0.0, 0.8], "energy": 1.0}
    result = run_batch("convex_coding", [cfg], seeds=1, out=tmp_path, workers=1)
    assert not result["failed"], result["failed"]
    m = {k: v["mean"] for k, v in next(iter(result["summary"].values()))["metrics"].items()}
    assert m["linear_closed_form_error"] < 1e-3 and m["q_spread.linear"] < 1e-3
    assert m["objective.nonneg_convex"] <= m["objective.nonneg_gd_best"] + 1e-6
    assert m["objective.linear_convex"] < m["objective.nonneg_convex"]
    assert m["identifiability.deg90"] > m["identifiability.deg1"]
    assert {"modularity.range_lost.rho0.8", "modularity.range_kept.rho0.8",
            "tightness.nonneg", "tightness.affine", "rank.nonneg"} <= set(m)
    assert m["rank.linear"] == 2 and m["tightness.linear"] < 1e-3
    cell = json.loads((tmp_path / "results.json").read_text())["cells"][0]
    assert any(a.endswith("convex_coding.png") for a in cell["artifacts"])
    table = next(a for a in cell["artifacts"] if a.endswith("sweeps.csv"))
    assert len(list(csv.DictReader((tmp_path / table).open()))) == 2 + 2 * 2
