"""The multi-scale residual VQ-VAE of next-scale prediction (VAR).

An image's feature map (dim, 8, 8) is quantised coarse to fine: at each scale s in SCALES the
residual still unexplained is pooled to s x s, every cell takes its nearest code, and the
codes, lifted back to 8 x 8 (bilinear, then a shared 3x3 convolution phi), are added to the
reconstruction and subtracted from the residual. The decoder sees the sum; the token maps of
all scales are what the autoregressive transformer predicts.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

SCALES = (1, 2, 4, 8)


class MultiScaleVQ(nn.Module):
    def __init__(self, codes: int = 256, dim: int = 32, hidden: int = 64,
                 scales: tuple[int, ...] = SCALES):
        super().__init__()
        self.config = dict(codes=codes, dim=dim, hidden=hidden, scales=tuple(scales))
        self.scales, self.side = tuple(scales), scales[-1]
        self.encoder = nn.Sequential(
            nn.Conv2d(3, hidden, 4, 2, 1), nn.GELU(), nn.Conv2d(hidden, hidden, 4, 2, 1),
            nn.GELU(), nn.Conv2d(hidden, hidden, 3, 1, 1), nn.GELU(), nn.Conv2d(hidden, dim, 1))
        self.decoder = nn.Sequential(
            nn.Conv2d(dim, hidden, 3, 1, 1), nn.GELU(),
            nn.ConvTranspose2d(hidden, hidden, 4, 2, 1), nn.GELU(),
            nn.ConvTranspose2d(hidden, hidden, 4, 2, 1), nn.GELU(),
            nn.Conv2d(hidden, 3, 3, 1, 1), nn.Sigmoid())
        self.codebook = nn.Embedding(codes, dim)
        nn.init.uniform_(self.codebook.weight, -1 / codes, 1 / codes)
        self.phi = nn.Conv2d(dim, dim, 3, 1, 1)

    def lift(self, index: torch.Tensor) -> torch.Tensor:
        """Token map (B, s, s) -> its contribution (B, dim, side, side)."""
        z = self.codebook(index).permute(0, 3, 1, 2)
        z = F.interpolate(z, size=(self.side, self.side), mode="bilinear", align_corners=False)
        return 0.5 * z + 0.5 * self.phi(z)

    def pool(self, f: torch.Tensor, s: int) -> torch.Tensor:
        return f if s == self.side else F.avg_pool2d(f, self.side // s)

    def nearest(self, f: torch.Tensor) -> torch.Tensor:
        """(B, dim, s, s) -> (B, s, s) code indices."""
        b, d, s, _ = f.shape
        flat = f.permute(0, 2, 3, 1).reshape(-1, d)
        book = self.codebook.weight
        dist = (flat ** 2).sum(1, keepdim=True) - 2 * flat @ book.T + (book ** 2).sum(1)
        return dist.argmin(1).view(b, s, s)

    def quantize(self, f: torch.Tensor
                 ) -> tuple[torch.Tensor, list[torch.Tensor], torch.Tensor]:
        """Straight-through reconstruction of f, the token map of each scale, and the VQ loss."""
        residual, f_hat, maps = f, torch.zeros_like(f), []
        for s in self.scales:
            index = self.nearest(self.pool(residual.detach(), s))
            z = self.lift(index)
            f_hat = f_hat + z
            residual = residual - z
            maps.append(index)
        loss = F.mse_loss(f_hat, f.detach()) + 0.25 * F.mse_loss(f, f_hat.detach())
        return f + (f_hat - f).detach(), maps, loss

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        f_hat, _, loss = self.quantize(self.encoder(images))
        return self.decoder(f_hat), loss

    @torch.no_grad()
    def tokens(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Targets and teacher-forced inputs of next-scale prediction: the flat token index
        of every scale (B, L), and for every scale after the first the accumulated
        reconstruction of the scales before it, pooled to its size (B, L - 1, dim)."""
        _, maps, _ = self.quantize(self.encoder(images))
        f_hat, inputs = 0.0, []
        for s, index in zip(self.scales[1:], maps[:-1]):
            f_hat = f_hat + self.lift(index)
            inputs.append(self.pool(f_hat, s).flatten(2).transpose(1, 2))
        return torch.cat([m.flatten(1) for m in maps], 1), torch.cat(inputs, 1)

    def decode_maps(self, maps: list[torch.Tensor]) -> list[torch.Tensor]:
        """The image after each scale: decoding the sum of the first k token maps."""
        f_hat, out = 0.0, []
        for index in maps:
            f_hat = f_hat + self.lift(index)
            out.append(self.decoder(f_hat))
        return out


@torch.no_grad()
def restart(model: MultiScaleVQ, used: torch.Tensor, f: torch.Tensor) -> None:
    """Move codes no cell chose lately onto feature vectors of this batch (pooled to every
    scale), so the codebook does not collapse onto a few codes."""
    pool = torch.cat([model.pool(f, s).permute(0, 2, 3, 1).reshape(-1, f.shape[1])
                      for s in model.scales])
    unused = (~used).nonzero().flatten()
    pick = torch.randint(0, len(pool), (len(unused),))
    model.codebook.weight[unused] = pool[pick] * 0.5


def train_vq(images: torch.Tensor, steps: int, seed: int = 0, advance=None,
             **config) -> MultiScaleVQ:
    """Reconstruction (MSE) plus the VQ loss, on (n, 3, H, W) images; unused codes are
    restarted every 50 steps for the first 80 % of them."""
    torch.manual_seed(seed)
    model = MultiScaleVQ(**config)
    opt = torch.optim.AdamW(model.parameters(), 2e-3)
    gen = torch.Generator().manual_seed(seed)
    used = torch.zeros(model.config["codes"], dtype=torch.bool)
    for step in range(steps):
        batch = images[torch.randint(0, len(images), (64,), generator=gen)]
        f = model.encoder(batch)
        if step % 50 == 0 and step < 0.8 * steps:
            restart(model, used, f.detach())
            used[:] = False
        f_hat, maps, vq = model.quantize(f)
        out = model.decoder(f_hat)
        loss = F.mse_loss(out, batch) + vq  # an L1 term kept it at the grey background
        opt.zero_grad()
        loss.backward()
        opt.step()
        for index in maps:
            used[index.unique()] = True
        if advance:
            advance()
    return model.eval()
