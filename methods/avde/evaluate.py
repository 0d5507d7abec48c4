"""`edgert evaluate avde`: retrieval and reconstruction on held-out concepts, every variant.

Protocol (THINGS-EEG's): the models train on the training concepts; each held-out concept's
image is shown `test_repetitions` times and its trials' embeddings are averaged. Retrieval
is N-way (all held-out images) top-1 / top-5 and 2-way; reconstruction is PixCorr, SSIM
(scikit-image), 2-way identification in the image-embedding space, and attribute accuracy
(colour, position, size, shape, texture) judged by a classifier trained on rendered images;
for AVDE also per scale, which shows what each scale decides. The SSVEP recording in
`../shared/data` is the real-data check: its attended target retrieved from the pretrained
encoder's embeddings, leave one trial out, against an untrained encoder.
"""
from __future__ import annotations

import base64
import time

import numpy as np
import torch
import torch.nn.functional as F
from skimage.metrics import structural_similarity
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from torch import nn

from edgert.methods.avde import images as image_set
from edgert.methods.avde import train as training
from edgert.methods.avde.baselines import (nearest_training_image, sample_diffusion,
                                           train_diffusion)
from edgert.methods.avde.data import RATE, Viewing, read, simulated, ssvep_trials
from edgert.methods.avde.generate import Generator, Sampling
from edgert.methods.avde.model import LaBraM, electrode_index
from edgert.methods.avde.node import encode_png
from edgert.runtime.plugin import Data
from edgert.runtime.progress import progress_bar

VARIANTS = ("avde", "no_pretraining", "mse_only", "retrieval_only", "diffusion")


class Config(training.Config):
    diffusion_steps: int = 1500
    ddim_steps: int = 25
    judge_steps: int = 400
    stage1_seeds: int = 3

    @classmethod
    def quick(cls) -> "Config":
        return cls(**training.Config.quick().model_dump(), diffusion_steps=120, judge_steps=200,
                   stage1_seeds=2)


class Judge(nn.Module):
    """Five heads, one per attribute, over a small CNN: the evaluation's attribute reader."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.GELU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 32, 3, padding=1), nn.GELU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(32 * 64, 128), nn.GELU())
        self.heads = nn.ModuleList(nn.Linear(128, len(v)) for v in image_set.ATTRIBUTES.values())

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        h = self.body(x)
        return [head(h) for head in self.heads]

    @torch.no_grad()
    def read(self, images: np.ndarray) -> np.ndarray:
        """(n, 3, H, W) -> (n, attributes) predicted value indices."""
        return np.stack([o.argmax(1).numpy() for o in
                         self(torch.from_numpy(np.ascontiguousarray(images, np.float32)))], 1)


def train_judge(steps: int, seed: int = 0) -> Judge:
    """Trained on jittered renders of every concept: a reader of the images' content."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed + 99)
    concepts = np.arange(len(image_set.CONCEPTS))
    x = torch.from_numpy(np.stack([image_set.render(c, rng) for c in np.tile(concepts, 4)]))
    y = torch.from_numpy(np.array([image_set.CONCEPTS[c] for c in np.tile(concepts, 4)]))
    judge = Judge()
    opt = torch.optim.AdamW(judge.parameters(), 2e-3)
    for _ in range(steps):
        idx = torch.randint(0, len(x), (128,))
        loss = sum(F.cross_entropy(o, y[idx, k]) for k, o in enumerate(judge(x[idx])))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return judge.eval()


def retrieval(emb: np.ndarray, gallery: np.ndarray) -> dict:
    """Row i of `emb` should find row i of `gallery`: N-way top-1/top-5 and 2-way."""
    sim = emb @ gallery.T
    rank = (sim > np.diag(sim)[:, None]).sum(1)
    n = len(sim)
    two_way = ((np.diag(sim)[:, None] > sim).sum(1) / max(n - 1, 1)).mean()
    return {"top1": float((rank == 0).mean()), "top5": float((rank < 5).mean()),
            "two_way": float(two_way), "n_way": n}


def reconstruction(made: np.ndarray, truth: np.ndarray, embedder, judge: Judge | None,
                   attributes: np.ndarray | None) -> dict:
    """PixCorr, SSIM, 2-way identification and attribute accuracy of images made for `truth`."""
    flat_m, flat_t = made.reshape(len(made), -1), truth.reshape(len(truth), -1)
    pixcorr = np.mean([np.corrcoef(a, b)[0, 1] for a, b in zip(flat_m, flat_t)])
    ssim = np.mean([structural_similarity(a, b, channel_axis=0, data_range=1.0)
                    for a, b in zip(made.astype(np.float64), truth.astype(np.float64))])
    e_m, e_t = embedder.embed(made), embedder.embed(truth)
    out = {"pixcorr": float(pixcorr), "ssim": float(ssim),
           "two_way_identification": retrieval(e_m, e_t)["two_way"]}
    if judge is not None and attributes is not None:
        out.update(attributes_right(judge.read(made), attributes))
    return out


def attributes_right(read: np.ndarray, truth: np.ndarray) -> dict:
    right = (read == truth).mean(0)
    result = {f"attr_{name}": float(r) for name, r in zip(image_set.ATTRIBUTES, right)}
    result["attr_mean"] = float(right.mean())
    return result


def mean_embeddings(emb: np.ndarray, shown: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Unit mean of each image's trial embeddings (the test protocol's repetition average)."""
    avg = np.stack([emb[shown == i].mean(0) for i in ids])
    return avg / np.linalg.norm(avg, axis=1, keepdims=True)


def ssvep_check(encoder: LaBraM, seed: int) -> dict:
    """The shared SSVEP recording's attended target, read four ways. With no training: the
    flicker frequency (with its harmonic) holding the most power, over all channels. With a
    linear probe: on each trial's log amplitude spectrum, and on the encoder's CLS and mean
    patch tokens, pretrained and, for contrast, never trained. The recording holds one 28-s
    block per target, so whatever drifts within a block can help a probe (`block_probe`);
    the training-free reading shows what the flicker alone gives."""
    found = ssvep_trials()
    if found is None:
        return {}
    x, y, channels, frequencies = found
    amplitude = np.abs(np.fft.rfft(x * np.hanning(x.shape[-1]), axis=-1)).mean(1)  # (n, bins)
    hz = np.fft.rfftfreq(x.shape[-1], 1 / RATE)
    at = [[np.argmin(abs(hz - f * h)) for h in (1, 2)] for f in frequencies]
    power = np.stack([amplitude[:, b].sum(1) for b in at], 1)  # (n, targets)
    band = (hz >= 5) & (hz <= 40)
    result = {"trials": int(len(y)), "chance": 1 / len(frequencies),
              "channels": " ".join(channels),
              "training_free": float((power.argmax(1) == y).mean()),
              "spectrum_probe": block_probe(np.log(amplitude[:, band]), y)}
    torch.manual_seed(seed)
    for name, model in (("pretrained", encoder), ("untrained", LaBraM(**encoder.config))):
        with torch.no_grad():
            tokens = model.eval()(torch.from_numpy(x), electrode_index(channels))
        result[name] = block_probe(torch.cat([tokens[:, 0], tokens[:, 1:].mean(1)], 1).numpy(),
                                   y)
    return result


def block_probe(features: np.ndarray, labels: np.ndarray, folds: int = 5, gap: int = 3
                ) -> float:
    """Accuracy of a logistic regression on trials in recording order, each label's trials
    a block: tested on every block's k-th contiguous part in turn, trained on the rest less
    the `gap` trials either side of a tested one (1-s windows 0.33 s apart overlap three)."""
    order = np.arange(len(labels))
    right = []
    for k in range(folds):
        test = np.zeros(len(labels), bool)
        for label in np.unique(labels):
            test[np.array_split(order[labels == label], folds)[k]] = True
        train = np.convolve(test, np.ones(2 * gap + 1), "same") == 0
        probe = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000))
        probe.fit(features[train], labels[train])
        right.append(probe.predict(features[test]) == labels[test])
    return float(np.concatenate(right).mean())


def example_strip(scales: list[np.ndarray], truth: np.ndarray, retrieved: np.ndarray,
                  diffusion: np.ndarray) -> str:
    """truth | retrieved | diffusion | AVDE's scales, coarse to fine: base64 PNG."""
    return base64.b64encode(encode_png([truth, retrieved, diffusion, *scales], 2).tobytes()
                            ).decode()


def image_condition(trained: training.Trained, held_out: np.ndarray, train: np.ndarray,
                    train_images: np.ndarray, judge: Judge, attributes: np.ndarray, seed: int
                    ) -> dict:
    """Attributes read right when the held-out images' own embeddings (`held_out`) stand in
    for the EEG's: what drawing and retrieving reach once stage 1 is perfect, which tells a
    decoding error from a generator that cannot compose."""
    generator = Generator.from_torch(trained.var, trained.vq, Sampling(seed=seed))
    drawn = np.stack([generator(c).image for c in held_out])
    nearest = nearest_training_image(held_out, train, train_images)
    return {"avde": attributes_right(judge.read(drawn), attributes),
            "retrieval_only": attributes_right(judge.read(nearest), attributes)}


def stage1_spread(viewing: Viewing, pretrained: LaBraM, gallery: np.ndarray, first: dict,
                  cfg: Config, advance) -> dict:
    """Retrieval of each stage-1 variant over `cfg.stage1_seeds` seeds (initialisation and
    batch order; the first is the evaluated model's, `first`): one seed's top-1 on a few dozen
    held-out images moves by several images, so the variants are compared by mean and spread."""
    eeg, shown = viewing.split(False)
    test_eeg, test_shown = viewing.split(True)
    ids = np.unique(test_shown)
    out = {}
    for name, how in training.STAGE1.items():
        runs = [first[name]]
        for seed in range(cfg.seed + 1, cfg.seed + cfg.stage1_seeds):
            torch.manual_seed(seed)
            encoder = training.stage1_start(pretrained if how["pretrained"] else None, cfg)
            model = training.align(encoder, eeg, gallery[shown], viewing.channels,
                                   cfg.model_copy(update={"seed": seed}), how["contrastive"],
                                   advance)
            emb = mean_embeddings(training.embed_eeg(model, test_eeg), test_shown, ids)
            runs.append(retrieval(emb, gallery[ids]))
        out[name] = {"seeds": len(runs)} | {
            f"{k}_{stat}": float(f([r[k] for r in runs]))
            for k in ("top1", "top5") for stat, f in (("mean", np.mean), ("sd", np.std))}
    return out


def params(*modules: nn.Module) -> int:
    return int(sum(p.numel() for m in modules for p in m.parameters()))


def evaluate(quick: bool = False, config: Config | None = None, data: Data | None = None
             ) -> dict:
    cfg = config or (Config.quick() if quick else Config())
    viewing = read(data) if data is not None else simulated(
        cfg.subject, cfg.per_concept, cfg.repetitions, cfg.test_repetitions, cfg.seed)
    with progress_bar() as progress:
        trained, aligned, pretrained = training.train_all(viewing, cfg, VARIANTS[:3], progress)
        task = progress.add_task("AVDE: diffusion baseline and judge",
                                 total=cfg.diffusion_steps)
        train_ids = np.unique(viewing.split(False)[1])
        gallery = trained.images.embed(viewing.images)
        index, conds = training.stage2_pairs(viewing, gallery, aligned["avde"])
        diffusion = train_diffusion(viewing.images[index], conds, cfg.diffusion_steps,
                                    cfg.seed, cfg.condition_noise,
                                    lambda: progress.advance(task))
        judge = train_judge(cfg.judge_steps, cfg.seed) if viewing.concepts is not None else None
    test_eeg, test_shown = viewing.split(True)
    ids = np.unique(test_shown)
    truth = viewing.images[ids]
    attributes = (np.array([image_set.CONCEPTS[c] for c in viewing.concepts[ids]])
                  if viewing.concepts is not None else None)
    results: dict[str, dict] = {}
    conds: dict[str, np.ndarray] = {}
    made: dict[str, list] = {}
    for name, model in aligned.items():
        conds[name] = mean_embeddings(training.embed_eeg(model, test_eeg), test_shown, ids)
        results[name] = retrieval(conds[name], gallery[ids])
        generator = Generator.from_torch(trained.var, trained.vq, Sampling(seed=cfg.seed))
        made[name] = [generator(c, every_scale=True) for c in conds[name]]
        results[name].update(reconstruction(np.stack([m.image for m in made[name]]), truth,
                                            trained.images, judge, attributes))
    avde_made = made["avde"]
    start = time.perf_counter()
    sampled = sample_diffusion(diffusion, conds["avde"], cfg.ddim_steps, seed=cfg.seed)
    diffusion_ms = (time.perf_counter() - start) / len(sampled) * 1e3
    results["diffusion"] = reconstruction(sampled, truth, trained.images, judge, attributes)
    nearest = nearest_training_image(conds["avde"], gallery[train_ids], viewing.images[train_ids])
    results["retrieval_only"] = reconstruction(nearest, truth, trained.images, judge, attributes)
    if attributes is not None:
        results["avde"]["scales"] = {
            str(size): attributes_right(judge.read(np.stack([m.scales[k] for m in avde_made])),
                                        attributes)
            for k, size in enumerate(trained.vq.scales)}
    ceiling = image_condition(trained, gallery[ids], gallery[train_ids],
                              viewing.images[train_ids], judge, attributes, cfg.seed) \
        if attributes is not None else {}
    with progress_bar() as progress:
        task = progress.add_task("AVDE: stage 1 again from more seeds", total=(
            cfg.stage1_seeds - 1) * len(training.STAGE1) * cfg.align_epochs)
        spread = stage1_spread(viewing, pretrained, gallery, results, cfg,
                               lambda: progress.advance(task))
    stage2 = params(trained.var, trained.vq)
    results["avde"].update(
        params_encoder=params(trained.aligner), params_generator=stage2,
        ms_per_image=float(np.mean([sum(m.seconds) for m in avde_made]) * 1e3),
        ms_per_scale={str(s): float(np.mean([m.seconds[k] for m in avde_made]) * 1e3)
                      for k, s in enumerate(trained.vq.scales)})
    results["diffusion"].update(params_generator=params(diffusion), ms_per_image=diffusion_ms,
                                ddim_steps=cfg.ddim_steps)
    return {"method": "avde", "config": cfg.model_dump(), "source": viewing.source,
            "held_out_images": int(len(ids)), "pretraining": trained.meta["pretraining"],
            "real_data": {"ssvep": ssvep_check(pretrained, cfg.seed)},
            "results": results, "stage1_seeds": spread, "image_condition": ceiling,
            "examples": [example_strip(avde_made[i].scales, truth[i], nearest[i], sampled[i])
                         for i in range(min(8, len(ids)))]}

