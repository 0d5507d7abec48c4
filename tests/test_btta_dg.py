"""BTTA-DG's parts, each against what it must do: the Dirichlet fit, the online mixture, the
Bayesian adapter, SincAdaptNet and its baked export form, the generator, alignment and the
gradient-based baselines."""
import numpy as np
import pytest
import torch
from scipy import signal
from scipy.special import digamma

from edgert.methods.btta_dg import dirichlet, synth
from edgert.methods.btta_dg.align import IncrementalAlignment, align_offline, covariance
from edgert.methods.btta_dg.baselines import BNAdapt, Tent
from edgert.methods.btta_dg.bayes import BayesianAdapter, features, source_stats
from edgert.methods.btta_dg.gmm import OnlineGMM
from edgert.methods.btta_dg.model import SincAdaptNet, SincConv, bake


def test_inverse_digamma_inverts_digamma():
    x = np.array([0.01, 0.3, 1.0, 7.5, 250.0])
    np.testing.assert_allclose(dirichlet.inverse_digamma(digamma(x)), x, rtol=1e-10)


@pytest.mark.parametrize("alpha", [(5.0, 2.0, 1.0, 1.0), (0.6, 0.6, 0.6), (80.0, 3.0, 2.0, 1.0)])
def test_dirichlet_fit_recovers_the_generating_alpha(alpha):
    rng = np.random.default_rng(0)
    p = rng.dirichlet(alpha, size=4000)
    fitted = dirichlet.fit(p)
    np.testing.assert_allclose(fitted, alpha, rtol=0.08)


def test_dirichlet_fit_is_the_maximum_of_the_likelihood():
    rng = np.random.default_rng(1)
    p = rng.dirichlet((3.0, 1.0, 1.0, 0.5), size=(6, 26))
    p = np.clip(p, dirichlet.EPS, 1)
    p /= p.sum(-1, keepdims=True)
    best = dirichlet.fit(p)
    at_best = dirichlet.log_likelihood(best, p)
    assert np.all(at_best >= dirichlet.log_likelihood(dirichlet.moments(p), p) - 1e-9)
    for scale in (0.9, 1.1):
        assert np.all(at_best > dirichlet.log_likelihood(best * scale, p))


def test_concentration_separates_agreeing_from_disagreeing_steps():
    """Same mean evidence, different agreement over time: alpha's sum tells them apart."""
    steady = np.tile([0.55, 0.15, 0.15, 0.15], (26, 1))
    steady = steady + np.random.default_rng(2).normal(0, 0.01, steady.shape)
    flicker = np.where(np.arange(26)[:, None] % 2, [0.9, 0.03, 0.03, 0.04],
                       [0.2, 0.27, 0.27, 0.26])
    a, b = dirichlet.fit(np.abs(steady)), dirichlet.fit(flicker)
    assert a.sum() > 10 * b.sum()
    assert np.argmax(a) == np.argmax(b) == 0


def test_online_gmm_moves_to_the_target_clusters_and_round_trips():
    rng = np.random.default_rng(3)
    gmm = OnlineGMM(np.zeros((2, 2)), np.stack([np.eye(2)] * 2), pseudo_count=5)
    for _ in range(300):
        k = rng.integers(2)
        x = rng.normal([3.0, -3.0][k], 0.5, 2)
        gmm.update(x, np.eye(2)[k])
    np.testing.assert_allclose(gmm.means, [[3, 3], [-3, -3]], atol=0.2)
    assert np.all(np.linalg.eigvalsh(gmm.covs) > 0)
    again = OnlineGMM.from_state(gmm.state())
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(again.log_likelihood(x), gmm.log_likelihood(x))


def _biased_trials(rng, n, shift):
    """Step probabilities of a network whose class-0 logit is inflated by `shift`."""
    labels = rng.integers(0, 4, n)
    logits = rng.normal(0, 1.0, (n, 26, 4)) + 2.0 * np.eye(4)[labels][:, None]
    logits[..., 0] += shift
    p = np.exp(logits)
    return p / p.sum(-1, keepdims=True), labels


def test_adapter_recovers_accuracy_lost_to_a_biased_network_and_restores(tmp_path):
    rng = np.random.default_rng(4)
    source_p, source_y = _biased_trials(rng, 400, 0.0)
    stats = source_stats(source_p, source_y)
    target_p, target_y = _biased_trials(rng, 300, 2.5)
    adapter = BayesianAdapter(stats)
    post = np.array([adapter.step(p)[0] for p in target_p])
    _, prior = features(target_p)
    before = np.mean(prior.argmax(1) == target_y)
    after = np.mean(post[100:].argmax(1) == target_y[100:])
    assert after > before + 0.15, (before, after)
    np.testing.assert_allclose(post.sum(1), 1.0)

    adapter.save(tmp_path / "state.json")
    restored = BayesianAdapter.load(tmp_path / "state.json")
    np.testing.assert_allclose(restored.step(target_p[0])[0], adapter.step(target_p[0])[0])


def test_without_the_mixture_the_posterior_is_the_prior():
    rng = np.random.default_rng(5)
    p, y = _biased_trials(rng, 50, 0.0)
    adapter = BayesianAdapter(source_stats(p, y), use_gmm=False)
    post, prior = adapter.step(p[0])
    np.testing.assert_array_equal(post, prior)


def _response(kernel: np.ndarray, rate: float, f: float) -> float:
    w, h = signal.freqz(kernel, worN=[f], fs=rate)
    return float(np.abs(h[0]))


def test_sinc_filters_tile_4_to_40_hz_and_pass_only_their_band():
    layer = SincConv(8, 125, 250.0)
    bands = layer.bands().detach().numpy()
    assert bands[0, 0] == pytest.approx(4.0, abs=0.01)
    assert bands[-1, 1] == pytest.approx(40.0 + 2.0, abs=0.01)  # + the minimum band
    kernels = layer.kernels().detach().numpy()
    for (lo, hi), k in zip(bands, kernels):
        assert _response(k, 250.0, (lo + hi) / 2) == pytest.approx(1.0, abs=0.05)
        assert _response(k, 250.0, hi + 15) < 0.1
        assert _response(k, 250.0, max(lo - 15, 0.5)) < 0.1 or lo < 16


def test_sincadaptnet_gives_a_distribution_per_step_and_bakes_exactly():
    torch.manual_seed(0)
    model = SincAdaptNet(22, 750, 4, 250.0).eval()
    x = torch.randn(3, 22, 750) * 10
    p = model(x)
    assert p.shape == (3, model.steps(), 4) and model.steps() > 10
    torch.testing.assert_close(p.sum(-1), torch.ones(3, model.steps()))
    baked = bake(model)
    assert isinstance(baked.temporal, torch.nn.Conv2d)
    torch.testing.assert_close(baked(x), p, atol=1e-5, rtol=1e-4)


def test_sinc_bands_learn_with_training_and_the_ablation_has_none():
    assert SincAdaptNet(4, 250, 2, 250.0, sinc=False).bands() is None
    model = SincAdaptNet(4, 250, 2, 250.0)
    before = model.bands().clone()
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    loss = model.logits(torch.randn(8, 4, 250)).square().mean()
    loss.backward()
    opt.step()
    assert not torch.equal(before, model.bands())


def test_generator_is_seeded_and_shows_erd_over_the_right_hemisphere():
    subject = synth.make_subject(1, shift=0.0)
    session = synth.make_session(subject, 0)
    x, y = synth.trials(subject, session, 40, seed=0)
    again, _ = synth.trials(subject, session, 40, seed=0)
    np.testing.assert_array_equal(x, again)
    assert x.shape == (40, 22, 1000) and sorted(np.bincount(y)) == [10, 10, 10, 10]
    c3, c4 = synth.CHANNELS.index("C3"), synth.CHANNELS.index("C4")
    f, psd = signal.welch(x[..., 250:], fs=synth.RATE, nperseg=250)
    mu = psd[..., (f >= 8) & (f <= 13)].mean(-1)
    left = y == synth.LABELS.index("left_hand")
    right = y == synth.LABELS.index("right_hand")
    # left-hand imagery desynchronises the right motor cortex (C4) and the reverse
    assert mu[left, c4].mean() < 0.7 * mu[right, c4].mean()
    assert mu[right, c3].mean() < 0.7 * mu[left, c3].mean()


def test_subjects_and_sessions_shift():
    a, b = synth.make_subject(1), synth.make_subject(2)
    assert a.mu_hz != b.mu_hz and not np.allclose(a.mixing, b.mixing)
    later = synth.make_session(a, 1)
    assert not np.allclose(later.rotation, np.eye(22))
    np.testing.assert_allclose(later.rotation @ later.rotation.T, np.eye(22), atol=1e-9)


def test_alignment_whitens_offline_and_online():
    rng = np.random.default_rng(6)
    mix = rng.normal(size=(6, 6))
    x = np.einsum("ij,njt->nit", mix, rng.normal(size=(200, 6, 300)))
    aligned = align_offline(x, np.zeros(200, int))
    np.testing.assert_allclose(covariance(aligned).mean(0), np.eye(6), atol=1e-6)
    online = IncrementalAlignment(6)
    last = [online(trial) for trial in x][-50:]
    np.testing.assert_allclose(covariance(np.stack(last)).mean(0), np.eye(6), atol=0.15)
    restored = IncrementalAlignment.from_state(online.state())
    np.testing.assert_allclose(restored(x[0]), online(x[0]), rtol=1e-5)


def test_bn_adapt_and_tent_change_the_model_without_touching_the_source():
    torch.manual_seed(1)
    model = SincAdaptNet(4, 250, 2, 250.0).eval()
    source = {k: v.clone() for k, v in model.state_dict().items()}
    trial = (np.random.default_rng(7).normal(size=(4, 250)) * 30).astype(np.float32)
    bn, tent = BNAdapt(model), Tent(model)
    bn.step(trial)
    tent.step(trial)
    tent.step(trial)
    assert bn.model.norm.num_batches_tracked == 1
    assert not torch.equal(tent.model.norm.weight, model.norm.weight)
    for k, v in model.state_dict().items():
        assert torch.equal(v, source[k]), k
