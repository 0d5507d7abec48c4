"""The image-embedding space EEG is aligned to, behind one interface.

AVDE aligns EEG to CLIP's image embeddings. No CLIP weights can be downloaded here, so the
default embedder is a small CLIP trained in this repo: a CNN image tower and a bag-of-words
caption tower, contrastive on the training concepts' images and their captions (the words of
their attributes, or a user's concept names). A user with an
OpenCLIP model passes `open_clip:MODEL:PRETRAINED` instead; everything downstream only calls
`embed`.
"""
from __future__ import annotations

import importlib.util
from typing import Protocol

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from edgert.runtime.plugin import DataError


class ImageEmbedder(Protocol):
    dim: int

    def embed(self, images: np.ndarray) -> np.ndarray:
        """(n, 3, H, W) in [0, 1] -> (n, dim) unit vectors."""


class SmallImageEncoder(nn.Module):
    """(B, 3, 32, 32) -> (B, dim) unit vectors."""

    def __init__(self, dim: int = 64):
        super().__init__()
        self.dim = dim
        self.net = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.GELU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.GELU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 32, 3, padding=1), nn.GELU(), nn.Flatten(),
            nn.Linear(32 * 8 * 8, 128), nn.GELU(), nn.Linear(128, dim))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.net(images), dim=-1)

    @torch.no_grad()
    def embed(self, images: np.ndarray) -> np.ndarray:
        self.eval()
        x = torch.from_numpy(np.ascontiguousarray(images, np.float32))
        return torch.cat([self(part) for part in x.split(256)]).numpy()


class CaptionEncoder(nn.Module):
    """CLIP's text tower at its smallest: the mean of the caption's word vectors, projected."""

    def __init__(self, vocabulary: int, dim: int):
        super().__init__()
        self.words = nn.EmbeddingBag(vocabulary, dim, mode="mean")
        self.proj = nn.Linear(dim, dim)

    def forward(self, words: torch.Tensor) -> torch.Tensor:  # (B, words) indices
        return F.normalize(self.proj(self.words(words)), dim=-1)


def clip_loss(images: torch.Tensor, captions: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Symmetric InfoNCE between matching image and caption embeddings (unit vectors)."""
    logits = scale.clamp(max=4.6).exp() * images @ captions.T
    target = torch.arange(len(images))
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2


def train_image_encoder(views: np.ndarray, captions: np.ndarray, dim: int = 64,
                        steps: int = 400, seed: int = 0, advance=None) -> SmallImageEncoder:
    """A small CLIP: `views` (concepts, k, 3, H, W) holds k renders of each concept and
    `captions` (concepts, words) the word indices describing it; each step contrasts one
    render of each of a batch of concepts with the captions."""
    torch.manual_seed(seed)
    model = SmallImageEncoder(dim)
    text = CaptionEncoder(int(captions.max()) + 1, dim)
    scale = nn.Parameter(torch.tensor(2.66))
    opt = torch.optim.AdamW([*model.parameters(), *text.parameters(), scale], 2e-3,
                            weight_decay=1e-4)
    data, words = torch.from_numpy(views), torch.from_numpy(captions)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randperm(len(data), generator=gen)[:128]
        pick = torch.randint(0, data.shape[1], (len(idx),), generator=gen)
        loss = clip_loss(model(data[idx, pick]), text(words[idx]), scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if advance:
            advance()
    return model.eval()


class OpenClipEmbedder:
    """An OpenCLIP model's image tower (`pip install open_clip_torch`; weights the user has)."""

    def __init__(self, model: str, pretrained: str):
        import open_clip

        self.model, _, self.preprocess = open_clip.create_model_and_transforms(model, pretrained)
        self.model.eval()
        self.size = self.preprocess.transforms[0].size
        self.dim = int(self.model.visual.output_dim)

    @torch.no_grad()
    def embed(self, images: np.ndarray) -> np.ndarray:
        x = F.interpolate(torch.from_numpy(np.ascontiguousarray(images, np.float32)),
                          size=self.size, mode="bicubic")
        mean = torch.tensor([0.4815, 0.4578, 0.4082])[:, None, None]
        std = torch.tensor([0.2686, 0.2613, 0.2758])[:, None, None]
        return F.normalize(self.model.encode_image((x - mean) / std), dim=-1).numpy()


def open_embedder(spec: str) -> ImageEmbedder:
    """An OpenCLIP image tower from `open_clip:MODEL:PRETRAINED` (this repo's own encoder,
    'own', is trained instead: `train.train_images`)."""
    kind, _, rest = spec.partition(":")
    model, _, pretrained = rest.partition(":")
    if kind != "open_clip" or not model or not pretrained:
        raise DataError(f"image encoder {spec!r}: use 'own' or 'open_clip:MODEL:PRETRAINED' "
                        "(e.g. open_clip:ViT-B-32:laion2b_s34b_b79k)")
    if importlib.util.find_spec("open_clip") is None:
        raise DataError(f"image encoder {spec!r} needs OpenCLIP: pip install open_clip_torch")
    return OpenClipEmbedder(model, pretrained)
