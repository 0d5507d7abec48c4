"""The ei_snn job: E-I circuits balanced at the start, Dale's law kept while training, the
divisor's zeros handled without breaking the gradient, and tiny cells through the runner."""
import json

import numpy as np
import pytest
import torch

pytest.importorskip("snntorch", reason="ei_snn needs the batch extra: pip install -e '.[batch]'")

from edgert.methods.ei_snn.data import load, shapes  # noqa: E402
from edgert.methods.ei_snn.figures import overview  # noqa: E402
from edgert.methods.ei_snn.model import EICircuit, SpikingNet, nonzero  # noqa: E402
from edgert.methods.ei_snn.train import fit  # noqa: E402
from edgert.runtime.batch import run_batch  # noqa: E402


def test_shapes_are_ten_noisy_classes_and_the_sets_split_stratified():
    x, y = shapes(500, np.random.default_rng(0))
    assert x.shape == (500, 144) and 0 <= x.min() and x.max() <= 1
    assert set(y.tolist()) == set(range(10))
    again, _ = shapes(500, np.random.default_rng(0))
    np.testing.assert_array_equal(x, again)
    xd, yd, xt, yt = load("digits", 0)
    assert xd.shape[1] == 64 and len(xd) + len(xt) == 1797
    share = np.bincount(yt) / (np.bincount(yd) + np.bincount(yt))
    np.testing.assert_allclose(share, 0.25, atol=0.01)
    with pytest.raises(ValueError, match="unknown dataset"):
        load("cifar", 0)


def test_ei_init_balances_inhibition_against_excitation_and_keeps_deep_layers_firing():
    x = torch.as_tensor(load("digits", 0)[0][:256])
    layer = EICircuit(64, 128)
    layer.probe = {}
    current = layer(x).detach()
    ratio = float(layer.probe["inhibit"].mean() / layer.probe["excite"].mean())
    assert 0.8 < ratio < 1.25, ratio
    assert 0.3 < float(current.std()) < 3.0, "gain control: currents near the threshold's scale"
    torch.manual_seed(0)
    ei, plain = (SpikingNet(k, 64, 10, 16, 64, 4) for k in ("ei", "plain"))
    with torch.no_grad():
        ei(x), plain(x)
    assert min(float(r.mean()) for r in ei.rates) > 0.01, "an E-I layer fell silent"
    assert float(plain.rates[-1].mean()) < 0.01, "a deep plain SNN should fall silent"


def test_zero_divisors_take_the_samples_smallest_and_the_gradient_passes_straight():
    d = torch.tensor([[0.0, 2.0, 0.5], [1.0, 3.0, 4.0], [0.0, 0.0, 0.0]], requires_grad=True)
    out = nonzero(d)
    np.testing.assert_allclose(out.detach().numpy(),
                               [[0.5, 2.0, 0.5], [1.0, 3.0, 4.0], [1.0, 1.0, 1.0]])
    out.sum().backward()
    np.testing.assert_allclose(d.grad.numpy(), np.ones((3, 3)))


def test_training_keeps_dales_law_and_learns():
    x, y, xt, yt = (torch.as_tensor(a) for a in load("digits", 0))
    torch.manual_seed(0)
    net = SpikingNet("ei", 64, 10, 4, 64, 4)
    losses, diverged = fit(net, x[:600], y[:600], epochs=3, lr=0.005, batch=64, seed=0)
    assert not diverged and losses[-1] < losses[0]
    for c in net.circuits():
        for p in (c.w_ee, c.w_ie, c.w_ei, c.g_i, c.g_e):
            assert float(p.detach().min()) >= 0.0, "a weight changed sign (Dale's law)"


def test_tiny_cells_through_the_runner(tmp_path):
    base = {"dataset": "digits", "depth": 4, "width": 64, "epochs": 6, "steps": 4,
            "lr": 0.01, "batch": 64}
    configs = [base | {"kind": "ei"}, base | {"kind": "plain"}]
    result = run_batch("ei_snn", configs, seeds=1, out=tmp_path, workers=1)
    assert not result["failed"], result["failed"]
    by_kind = {e["config"]["kind"]: {k: v["mean"] for k, v in e["metrics"].items()}
               for e in result["summary"].values()}
    ei = by_kind["ei"]
    assert ei["accuracy"] > 0.5 and ei["diverged"] == 0
    assert 0.5 < ei["ei_ratio"] < 1.5 and -1 <= ei["ei_corr"] <= 1
    assert "ei_ratio" not in by_kind["plain"]
    cell = json.loads((tmp_path / "results.json").read_text())["cells"][0]
    assert any(a.endswith("layers.png") for a in cell["artifacts"])
    assert any(a.endswith("layers.csv") for a in cell["artifacts"])
    [figure] = overview(result, tmp_path)
    assert figure.exists() and figure.stat().st_size > 10_000
