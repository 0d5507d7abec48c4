"""The EEG side of AVDE: a LaBraM-style encoder, its neural tokenizer, and the alignment head.

LaBraM cuts every channel into 1-s patches (200 samples at 200 Hz), encodes each patch with
a temporal convolution, adds a learned embedding of the electrode and of the patch's time
index, prepends a CLS token and runs a transformer. It is pretrained by masked EEG modelling:
the neural tokenizer (a vector-quantised patch code trained to predict each patch's Fourier
amplitude and phase) gives every patch a code, and the encoder predicts the codes of masked
patches from the rest, once with a mask and once with its inverse (the symmetric branch).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

PATCH = 200  # samples per patch: 1 s at 200 Hz
ELECTRODES = (
    "Fp1 Fpz Fp2 AF7 AF3 AFz AF4 AF8 F9 F7 F5 F3 F1 Fz F2 F4 F6 F8 F10 FT9 FT7 FC5 FC3 FC1 FCz "
    "FC2 FC4 FC6 FT8 FT10 T9 T7 C5 C3 C1 Cz C2 C4 C6 T8 T10 TP9 TP7 CP5 CP3 CP1 CPz CP2 CP4 CP6 "
    "TP8 TP10 P9 P7 P5 P3 P1 Pz P2 P4 P6 P8 P10 PO9 PO7 PO5 PO3 POz PO4 PO6 PO8 PO10 O1 Oz O2 "
    "O9 O10 Iz T3 T4 T5 T6 M1 M2 A1 A2").split()
UNKNOWN = len(ELECTRODES)  # one shared embedding for electrodes outside the 10-10 system


def electrode_index(names: list[str] | tuple[str, ...]) -> torch.Tensor:
    """The spatial-embedding row of each channel name (case-insensitive)."""
    upper = {e.upper(): i for i, e in enumerate(ELECTRODES)}
    return torch.tensor([upper.get(n.strip().upper(), UNKNOWN) for n in names])


class Block(nn.Module):
    """Pre-norm transformer block."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, W)
        b, t, w = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, w // self.heads).unbind(2)
        att = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                             v.transpose(1, 2))
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, w))
        return x + self.mlp(self.norm2(x))


class PatchEncoder(nn.Module):
    """Temporal convolutions over one patch: (N, PATCH) -> (N, width)."""

    def __init__(self, width: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, 8, 15, stride=8, padding=7), nn.GroupNorm(4, 8), nn.GELU(),
            nn.Conv1d(8, 8, 3, padding=1), nn.GroupNorm(4, 8), nn.GELU(),
            nn.Conv1d(8, 8, 3, padding=1), nn.GroupNorm(4, 8), nn.GELU(), nn.Flatten(),
            nn.Linear(8 * math.ceil(PATCH / 8), width))

    def forward(self, patches: torch.Tensor) -> torch.Tensor:
        return self.net(patches[:, None])


class LaBraM(nn.Module):
    """(B, C, T) EEG in uV, T a multiple of PATCH -> (B, 1 + C * T / PATCH, width) tokens."""

    def __init__(self, width: int = 96, depth: int = 3, heads: int = 4, max_patches: int = 8,
                 scale_uv: float = 20.0):
        super().__init__()
        self.config = dict(width=width, depth=depth, heads=heads, max_patches=max_patches,
                           scale_uv=scale_uv)
        self.scale = 1.0 / scale_uv
        self.patch = PatchEncoder(width)
        self.spatial = nn.Embedding(UNKNOWN + 1, width)
        self.temporal = nn.Embedding(max_patches, width)
        self.cls = nn.Parameter(torch.zeros(1, 1, width))
        self.mask_token = nn.Parameter(torch.zeros(1, 1, width))
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(width)
        nn.init.trunc_normal_(self.cls, std=0.02)
        nn.init.trunc_normal_(self.mask_token, std=0.02)

    def forward(self, x: torch.Tensor, electrodes: torch.Tensor,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        b, c, t = x.shape
        n = t // PATCH
        patches = (x * self.scale).reshape(b, c, n, PATCH).transpose(1, 2)  # (B, n, C, PATCH)
        tokens = self.patch(patches.reshape(-1, PATCH)).view(b, n * c, -1)
        if mask is not None:  # (B, n * C) True where masked
            tokens = torch.where(mask[..., None], self.mask_token.expand_as(tokens), tokens)
        where = (self.spatial(electrodes).repeat(n, 1)
                 + self.temporal.weight[:n].repeat_interleave(c, 0))
        tokens = torch.cat([self.cls.expand(b, -1, -1), tokens + where], 1)
        for block in self.blocks:
            tokens = block(tokens)
        return self.norm(tokens)


def fourier_targets(patches: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each patch's log amplitude spectrum, standardised per patch, and its phase as
    (cos, sin): what the tokenizer's codes must predict. patches (N, PATCH)."""
    spectrum = torch.fft.rfft(patches, dim=-1)
    amplitude = torch.log1p(spectrum.abs())
    amplitude = (amplitude - amplitude.mean(-1, keepdim=True)) / (
        amplitude.std(-1, keepdim=True) + 1e-6)
    phase = torch.angle(spectrum)
    return amplitude, torch.cat([phase.cos(), phase.sin()], -1)


class Tokenizer(nn.Module):
    """The neural tokenizer: a small LaBraM whose patch tokens are quantised to a codebook of
    l2-normalised codes; decoders predict the Fourier amplitude and phase of every patch from
    its code, so a code names what a patch's spectrum is. As LaBraM's, the codebook follows
    its patches by exponential moving averages, not gradients, and a code no patch chose for
    a while is moved onto a patch's vector (without both it collapsed onto two codes)."""

    def __init__(self, codes: int = 256, dim: int = 32, width: int = 64, depth: int = 2,
                 decay: float = 0.99):
        super().__init__()
        self.decay = decay
        self.encoder = LaBraM(width, depth, heads=4)
        self.down = nn.Linear(width, dim)
        self.center = nn.BatchNorm1d(dim, affine=False)
        self.register_buffer("codebook", F.normalize(torch.randn(codes, dim), dim=-1))
        self.register_buffer("sums", self.codebook.clone())
        self.register_buffer("counts", torch.zeros(codes))  # all dead: first step inits from data
        bins = PATCH // 2 + 1
        self.amplitude = nn.Sequential(nn.Linear(dim, width), nn.GELU(), nn.Linear(width, bins))
        self.phase = nn.Sequential(nn.Linear(dim, width), nn.GELU(), nn.Linear(width, 2 * bins))

    def project(self, x: torch.Tensor, electrodes: torch.Tensor) -> torch.Tensor:
        """Unit vectors of every patch, before quantisation: (B, N, dim)."""
        h = self.down(self.encoder(x, electrodes)[:, 1:])
        b, n, d = h.shape
        return F.normalize(self.center(h.reshape(-1, d)).view(b, n, d), dim=-1)

    def codes(self, x: torch.Tensor, electrodes: torch.Tensor
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Code index per patch (B, N), the quantised vectors (straight-through) and the
        commitment loss; in training, the codebook's moving averages step too."""
        z = self.project(x, electrodes)
        index = (z @ self.codebook.T).argmax(-1)
        if self.training:
            self._follow(z.detach().reshape(-1, z.shape[-1]), index.flatten())
        q = self.codebook[index]
        return index, z + (q - z).detach(), 0.25 * F.mse_loss(z, q)

    @torch.no_grad()
    def _follow(self, z: torch.Tensor, index: torch.Tensor) -> None:
        hits = F.one_hot(index, len(self.codebook)).to(z.dtype)  # (patches, codes)
        self.counts.mul_(self.decay).add_(hits.sum(0), alpha=1 - self.decay)
        self.sums.mul_(self.decay).add_(hits.T @ z, alpha=1 - self.decay)
        self.codebook.copy_(F.normalize(self.sums, dim=-1))
        dead = self.counts < 1e-2
        if dead.any():
            pick = z[torch.randint(0, len(z), (int(dead.sum()),))]
            self.codebook[dead], self.sums[dead], self.counts[dead] = pick, pick * 0.01, 0.01

    def loss(self, x: torch.Tensor, electrodes: torch.Tensor) -> torch.Tensor:
        _, q, commit = self.codes(x, electrodes)
        b, c, t = x.shape
        patches = x.reshape(b, c, t // PATCH, PATCH).transpose(1, 2).reshape(-1, PATCH)
        amplitude, phase = fourier_targets(patches * self.encoder.scale)
        q = q.reshape(-1, q.shape[-1])
        return (F.mse_loss(self.amplitude(q), amplitude) + F.mse_loss(self.phase(q), phase)
                + commit)


def masked_modelling_loss(encoder: LaBraM, head: nn.Linear, tokenizer: Tokenizer,
                          x: torch.Tensor, electrodes: torch.Tensor, ratio: float = 0.5
                          ) -> torch.Tensor:
    """Predict the tokenizer's codes of masked patches; then the symmetric branch predicts
    those of the patches the first branch saw, with the inverse mask."""
    with torch.no_grad():
        target, _, _ = tokenizer.codes(x, electrodes)  # (B, N)
    mask = torch.rand(target.shape, device=x.device) < ratio
    loss = 0.0
    for m in (mask, ~mask):
        logits = head(encoder(x, electrodes, m)[:, 1:])
        loss = loss + F.cross_entropy(logits[m], target[m])
    return loss


class EEGToImage(nn.Module):
    """The stage-1 model: LaBraM's CLS token projected into the image-embedding space."""

    def __init__(self, encoder: LaBraM, embed_dim: int, electrodes: torch.Tensor):
        super().__init__()
        self.encoder = encoder
        width = encoder.config["width"]
        self.head = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, embed_dim))
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))
        self.register_buffer("electrodes", electrodes.clone())

    def forward(self, eeg: torch.Tensor) -> torch.Tensor:  # (B, C, PATCH) -> (B, embed_dim)
        tokens = self.encoder(eeg, self.electrodes)
        return self.head(torch.cat([tokens[:, 0], tokens[:, 1:].mean(1)], 0).view(
            2, eeg.shape[0], -1).sum(0))


def alignment_loss(pred: torch.Tensor, target: torch.Tensor, logit_scale: torch.Tensor,
                   contrastive: float = 0.2) -> torch.Tensor:
    """0.8 * MSE + 0.2 * symmetric InfoNCE between EEG and image embeddings (batch pairs)."""
    mse = F.mse_loss(pred, target)
    if contrastive == 0:
        return mse
    logits = logit_scale.clamp(max=math.log(100)).exp() * F.normalize(pred, dim=-1) @ \
        F.normalize(target, dim=-1).T
    labels = torch.arange(len(pred), device=pred.device)
    nce = (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2
    return (1 - contrastive) * mse + contrastive * nce
