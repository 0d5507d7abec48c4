"""Training AVDE end to end, stage by stage, and the checkpoint it leaves.

1. the image embedder (image_encoder.py) on the training images;
2. the neural tokenizer, then LaBraM by symmetric masked EEG modelling, on unlabelled EEG: the
   shared real recordings plus simulated EEG (`Config.simulated_s`);
3. stage 1: the encoder fine-tuned to the image embeddings, 0.8 MSE + 0.2 InfoNCE;
4. stage 2: the multi-scale VQ-VAE on the training images, then next-scale prediction
   conditioned on their embeddings and on the EEG embeddings of the trials that showed them
   (noised; the EEG's are what it is conditioned on live).
Held-out concepts are never trained on by any stage.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import BaseModel, Field
from rich.progress import Progress

from edgert.methods.avde import images as image_set
from edgert.methods.avde import simulate
from edgert.methods.avde.data import Viewing, pretraining_corpus, read, simulated
from edgert.methods.avde.image_encoder import (ImageEmbedder, SmallImageEncoder, open_embedder,
                                               train_image_encoder)
from edgert.methods.avde.model import (EEGToImage, LaBraM, Tokenizer, alignment_loss,
                                       electrode_index, masked_modelling_loss)
from edgert.methods.avde.var import VAR, train_var
from edgert.methods.avde.vqvae import MultiScaleVQ, train_vq
from edgert.runtime.plugin import Data, own_out
from edgert.methods.cache import CHECKPOINT, cache_folder
from edgert.export.checkpoint import load_checkpoint
from edgert.runtime.progress import progress_bar

STAGE1 = {"avde": dict(pretrained=True, contrastive=0.2),
          "no_pretraining": dict(pretrained=False, contrastive=0.2),
          "mse_only": dict(pretrained=True, contrastive=0.0)}


class Config(BaseModel):
    """Sizes and steps of every stage; `quick()` fits `--quick` in minutes on 2 cores."""

    subject: int = 1
    per_concept: int = Field(3, description="jittered images per training concept")
    repetitions: int = Field(2, description="times each training image is shown")
    test_repetitions: int = Field(20, description="times each held-out image is shown")
    embed_dim: int = 64
    image_encoder: str = Field("own", description="'own' (a small CLIP trained here) or "
                               "'open_clip:MODEL:PRETRAINED' (an OpenCLIP model you have)")
    width: int = 96
    depth: int = 3
    image_steps: int = 600
    tokenizer_steps: int = 600
    pretrain_steps: int = 1500
    simulated_s: int = Field(2400, description="seconds of simulated unlabelled EEG")
    align_epochs: int = 30
    vq_steps: int = 1500
    var_steps: int = 2500
    condition_noise: float = 0.05
    seed: int = 0

    @classmethod
    def quick(cls) -> "Config":
        return cls(per_concept=2, test_repetitions=10, image_steps=250, tokenizer_steps=200,
                   pretrain_steps=300, simulated_s=300, align_epochs=20, vq_steps=500,
                   var_steps=800)


@dataclass
class Trained:
    """Everything the live pipeline and evaluation need."""

    images: ImageEmbedder
    aligner: EEGToImage
    vq: MultiScaleVQ
    var: VAR
    channels: tuple[str, ...]
    gallery: np.ndarray  # (m, 3, H, W) images retrieval answers with
    gallery_ids: list[str]
    meta: dict = field(default_factory=dict)
    examples: np.ndarray | None = None  # a few trials: the export's parity inputs

    def save(self, folder: Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / CHECKPOINT
        own = isinstance(self.images, SmallImageEncoder)
        torch.save({"images": self.images.state_dict() if own else None,
                    "image_encoder": "own" if own else self.meta["image_encoder"],
                    "image_dim": self.images.dim,
                    "encoder": self.aligner.encoder.config, "aligner": self.aligner.state_dict(),
                    "vq_config": self.vq.config, "vq": self.vq.state_dict(),
                    "var_config": self.var.config, "var": self.var.state_dict(),
                    "channels": list(self.channels), "gallery": torch.from_numpy(self.gallery),
                    "gallery_ids": self.gallery_ids, "meta": self.meta,
                    "examples": torch.from_numpy(self.examples)}, path)
        return path

    @classmethod
    def load(cls, path: Path) -> "Trained":
        path = Path(path)
        path = path / CHECKPOINT if path.is_dir() else path
        if not path.exists():
            raise FileNotFoundError(f"{path}: no AVDE checkpoint; make one with "
                                    "`edgert train avde --out DIR`")
        s = load_checkpoint(path, "an AVDE checkpoint",
                            "make one with `edgert train avde --out DIR`")
        if s.get("image_encoder", "own") == "own":
            images = SmallImageEncoder(s["image_dim"])
            images.load_state_dict(s["images"])
            images.eval()
        else:
            images = open_embedder(s["image_encoder"])
        aligner = EEGToImage(LaBraM(**s["encoder"]), s["image_dim"],
                             electrode_index(s["channels"]))
        aligner.load_state_dict(s["aligner"])
        vq = MultiScaleVQ(**s["vq_config"])
        vq.load_state_dict(s["vq"])
        var = VAR(**s["var_config"])
        var.load_state_dict(s["var"])
        return cls(images, aligner.eval(), vq.eval(), var.eval(), tuple(s["channels"]),
                   s["gallery"].numpy(), list(s["gallery_ids"]), s["meta"],
                   s["examples"].numpy())


def captions(names: list[str]) -> np.ndarray:
    """(n, words) word indices of each name, padded by repeating its last word."""
    words = [n.split() for n in names]
    vocabulary = {w: i for i, w in enumerate(dict.fromkeys(w for ws in words for w in ws))}
    longest = max(map(len, words))
    return np.array([[vocabulary[w] for w in ws] + [vocabulary[ws[-1]]] * (longest - len(ws))
                     for ws in words])


def train_images(viewing: Viewing, cfg: Config, advance) -> ImageEmbedder:
    """The small CLIP on the training images and their names: a simulated concept drawn
    afresh with jitter at every step, a user's images as they are and shifted. Another
    embedder (`cfg.image_encoder`) is used as it is."""
    if cfg.image_encoder != "own":
        return open_embedder(cfg.image_encoder)
    train = np.unique(viewing.split(False)[1])
    names = [viewing.names[i] for i in train]
    if viewing.concepts is not None:
        concepts = np.unique(viewing.concepts[train])
        rng = np.random.default_rng(cfg.seed)
        renders = np.stack([[image_set.render(c, rng) for _ in range(4)] for c in concepts])
        names = [image_set.describe(int(c)) for c in concepts]
    else:
        x = viewing.images[train]
        renders = np.stack([x, np.roll(x, 2, -1), np.roll(x, -2, -2)], 1)
    return train_image_encoder(renders.astype(np.float32), captions(names), cfg.embed_dim,
                               cfg.image_steps, cfg.seed, advance)


def unlabelled(cfg: Config) -> tuple[list[tuple[np.ndarray, torch.Tensor]], dict]:
    """Windows of 4 patches from each real recording and from simulated viewing, with the
    electrode indices of each source; and the seconds of each."""
    real, seconds = pretraining_corpus()
    rng = np.random.default_rng(cfg.seed)
    sim = []
    for k in range(4):  # viewers the stage-1 data never comes from
        person = simulate.make_subject(10_000 + 10 * cfg.subject + k)
        count = max(1, int(cfg.simulated_s / 4 / np.mean(simulate.SOA_S)))
        data, _ = simulate.session(person, rng.integers(0, len(image_set.CONCEPTS), count),
                                   cfg.seed)
        x = simulate.filtered(data)
        n = len(x) // 800
        sim.append(x[:n * 800].T.reshape(x.shape[1], n, 800).transpose(1, 0, 2))
    sim = np.concatenate(sim)
    seconds["simulated"] = len(sim) * 4
    sources = [(w, electrode_index(ch)) for w, ch in real + [(sim, simulate.CHANNELS)]]
    return sources, seconds


def batches(sources, steps: int, seed: int, size: int = 16):
    """(windows, electrodes) batches, sources drawn in proportion to their windows."""
    rng = np.random.default_rng(seed)
    weights = np.array([len(w) for w, _ in sources], float)
    for _ in range(steps):
        windows, electrodes = sources[rng.choice(len(sources), p=weights / weights.sum())]
        yield torch.from_numpy(windows[rng.integers(0, len(windows), size)]), electrodes


def pretrain(cfg: Config, advance) -> tuple[LaBraM, dict]:
    """The tokenizer, then LaBraM by symmetric masked modelling of its codes."""
    torch.manual_seed(cfg.seed)
    sources, seconds = unlabelled(cfg)
    tokenizer = Tokenizer()
    opt = torch.optim.AdamW(tokenizer.parameters(), 1e-3)
    for x, e in batches(sources, cfg.tokenizer_steps, cfg.seed):
        loss = tokenizer.loss(x, e)
        opt.zero_grad()
        loss.backward()
        opt.step()
        advance()
    tokenizer.eval()
    encoder = LaBraM(cfg.width, cfg.depth)
    head = torch.nn.Linear(cfg.width, tokenizer.codebook.shape[0])
    opt = torch.optim.AdamW([*encoder.parameters(), *head.parameters()], 1e-3, weight_decay=0.05)
    for x, e in batches(sources, cfg.pretrain_steps, cfg.seed + 1):
        loss = masked_modelling_loss(encoder, head, tokenizer, x, e)
        opt.zero_grad()
        loss.backward()
        opt.step()
        advance()
    with torch.no_grad():
        used = np.unique(np.concatenate([tokenizer.codes(x, e)[0].flatten().numpy()
                                         for x, e in batches(sources, 8, cfg.seed + 2)]))
    return encoder, {"seconds": seconds, "codes_used": int(len(used)),
                     "masked_modelling_loss": loss.item()}


def stage1_start(pretrained: LaBraM | None, cfg: Config) -> LaBraM:
    """The encoder stage 1 fine-tunes: a copy of `pretrained`, or a new one (no_pretraining)."""
    start = pretrained if pretrained is not None else LaBraM(cfg.width, cfg.depth)
    encoder = LaBraM(**start.config)
    encoder.load_state_dict(start.state_dict())
    return encoder


def align(encoder: LaBraM, eeg: np.ndarray, targets: np.ndarray, channels, cfg: Config,
          contrastive: float, advance) -> EEGToImage:
    """Stage 1: the encoder and a head to the image embeddings of the trials' images."""
    torch.manual_seed(cfg.seed)
    model = EEGToImage(encoder, targets.shape[1], electrode_index(channels))
    opt = torch.optim.AdamW([{"params": model.encoder.parameters(), "lr": 3e-4},
                             {"params": [*model.head.parameters(), model.logit_scale]}],
                            1e-3, weight_decay=0.05)
    x, y = torch.from_numpy(eeg), torch.from_numpy(targets)
    gen = torch.Generator().manual_seed(cfg.seed)
    model.train()
    for _ in range(cfg.align_epochs):
        for idx in torch.randperm(len(x), generator=gen).split(64):
            loss = alignment_loss(model(x[idx]), y[idx], model.logit_scale, contrastive)
            opt.zero_grad()
            loss.backward()
            opt.step()
        advance()
    return model.eval()


@torch.no_grad()
def embed_eeg(model: EEGToImage, eeg: np.ndarray) -> np.ndarray:
    """(n, channels, PATCH) -> (n, dim) unit vectors."""
    x = torch.from_numpy(np.ascontiguousarray(eeg, np.float32))
    return F.normalize(torch.cat([model(p) for p in x.split(256)]), dim=-1).numpy()


def stage2_pairs(viewing: Viewing, gallery: np.ndarray, aligner: EEGToImage
                 ) -> tuple[np.ndarray, np.ndarray]:
    """What stage 2 learns to draw from: every training image under its own embedding, and
    under the EEG embedding of every trial that showed it (the conditions it gets live)."""
    eeg, shown = viewing.split(False)
    train_idx = np.unique(shown)
    return (np.concatenate([train_idx, shown]),
            np.concatenate([gallery[train_idx], embed_eeg(aligner, eeg)]))


def generator(images: np.ndarray, index: np.ndarray, conds: np.ndarray, cfg: Config, advance
              ) -> tuple[MultiScaleVQ, VAR]:
    """Stage 2: the VQ-VAE on `images`, then next-scale prediction of `images[index]` from
    `conds`."""
    x = torch.from_numpy(images)
    vq = train_vq(x, cfg.vq_steps, cfg.seed, advance)
    targets, inputs = vq.tokens(x)
    var = VAR(cond_dim=conds.shape[1], width=cfg.width, depth=cfg.depth)
    pick = torch.from_numpy(index)
    return vq, train_var(var, torch.from_numpy(conds), targets[pick], inputs[pick],
                         cfg.var_steps, cfg.seed, cfg.condition_noise, advance)


def stage_count(cfg: Config, variants: int) -> int:
    return (cfg.image_steps + cfg.tokenizer_steps + cfg.pretrain_steps + variants
            * cfg.align_epochs + cfg.vq_steps + cfg.var_steps)


def train_all(viewing: Viewing, cfg: Config, variants: tuple[str, ...] = ("avde",),
              progress: Progress | None = None
              ) -> tuple[Trained, dict[str, EEGToImage], LaBraM | None]:
    """Every stage; stage 1 once per variant in STAGE1. The Trained model uses the first
    variant's; the pretrained encoder (before stage 1) comes back too."""
    task = progress.add_task("training AVDE", total=stage_count(cfg, len(variants))) \
        if progress else None

    def advance():
        if progress:
            progress.advance(task)

    def say(what: str):
        if progress:
            progress.update(task, description=f"AVDE: {what}")

    say("image embedder")
    images = train_images(viewing, cfg, advance)
    gallery = images.embed(viewing.images)
    say("tokenizer and masked EEG modelling")
    pretrained, pre = pretrain(cfg, advance) if any(STAGE1[v]["pretrained"] for v in variants) \
        else (None, {})
    eeg, shown = viewing.split(False)
    aligned = {}
    for name in variants:
        say(f"stage 1 ({name})")
        encoder = stage1_start(pretrained if STAGE1[name]["pretrained"] else None, cfg)
        aligned[name] = align(encoder, eeg, gallery[shown], viewing.channels, cfg,
                              STAGE1[name]["contrastive"], advance)
    say("stage 2: VQ-VAE and next-scale prediction")
    train_idx = np.unique(shown)
    index, conds = stage2_pairs(viewing, gallery, aligned[variants[0]])
    remap = np.searchsorted(train_idx, index)
    vq, var = generator(viewing.images[train_idx], remap, conds, cfg, advance)
    meta = {"config": cfg.model_dump(), "pretraining": pre, "source": viewing.source,
            "image_encoder": cfg.image_encoder}
    trained = Trained(images, aligned[variants[0]], vq, var, viewing.channels, viewing.images,
                      list(viewing.names), meta, eeg[:8])
    return trained, aligned, pretrained


def train(out: Path | None = None, quick: bool = False, seed: int = 0,
          data: Data | None = None) -> Path:
    """Train on a simulated viewer (or on `data`, a THINGS-EEG2 subject) and save."""
    cfg = Config.quick() if quick else Config()
    cfg.seed = seed
    if data is not None:
        viewing, out = read(data), own_out(out)
    else:
        viewing = simulated(cfg.subject, cfg.per_concept, cfg.repetitions, cfg.test_repetitions,
                            seed)
    with progress_bar() as progress:
        trained, _, _ = train_all(viewing, cfg, progress=progress)
    return trained.save(out or cache_folder("avde"))
