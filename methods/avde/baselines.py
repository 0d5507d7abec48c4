"""What AVDE is compared with: a conditional diffusion decoder and plain retrieval.

`diffusion` is the unCLIP-style decoder at small scale: a `diffusers` UNet conditioned on the
same embedding (projected into its time embedding, dropped a tenth of the time for
classifier-free guidance), trained by noise prediction and sampled by DDIM. `retrieval_only`
answers with the nearest training image.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class DiffusionDecoder(nn.Module):
    """A conditional UNet over (B, 3, 32, 32) images in [-1, 1]."""

    def __init__(self, cond_dim: int, channels: tuple[int, ...] = (64, 128, 192)):
        super().__init__()
        from diffusers import UNet2DModel

        self.unet = UNet2DModel(
            sample_size=32, in_channels=3, out_channels=3, layers_per_block=1,
            block_out_channels=channels, down_block_types=("DownBlock2D", "AttnDownBlock2D",
                                                           "DownBlock2D"),
            up_block_types=("UpBlock2D", "AttnUpBlock2D", "UpBlock2D"),
            class_embed_type="identity")
        self.cond = nn.Linear(cond_dim, channels[0] * 4)
        self.null = nn.Parameter(torch.zeros(cond_dim))

    def forward(self, x: torch.Tensor, t: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        return self.unet(x, t, class_labels=self.cond(cond)).sample


def train_diffusion(images: np.ndarray, conds: np.ndarray, steps: int, seed: int = 0,
                    noise: float = 0.05, advance=None) -> DiffusionDecoder:
    """Noise prediction (DDPM, 1000 steps) with conditions noised and dropped as stage 2's."""
    from diffusers import DDPMScheduler

    torch.manual_seed(seed)
    model = DiffusionDecoder(conds.shape[1])
    schedule = DDPMScheduler(num_train_timesteps=1000)
    opt = torch.optim.AdamW(model.parameters(), 3e-4)
    x, c = torch.from_numpy(images) * 2 - 1, torch.from_numpy(conds)
    gen = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(steps):
        idx = torch.randint(0, len(x), (16,), generator=gen)
        cond = c[idx] + noise * torch.randn(c[idx].shape, generator=gen)
        cond = torch.where((torch.rand(len(idx), generator=gen) < 0.1)[:, None],
                           model.null.expand_as(cond), cond)
        eps = torch.randn(x[idx].shape, generator=gen)
        t = torch.randint(0, 1000, (len(idx),), generator=gen)
        loss = F.mse_loss(model(schedule.add_noise(x[idx], eps, t), t, cond), eps)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if advance:
            advance()
    return model.eval()


@torch.no_grad()
def sample_diffusion(model: DiffusionDecoder, conds: np.ndarray, steps: int = 25,
                     guidance: float = 2.0, seed: int = 0) -> np.ndarray:
    """DDIM with classifier-free guidance: (n, cond_dim) -> (n, 3, 32, 32) in [0, 1]."""
    from diffusers import DDIMScheduler

    schedule = DDIMScheduler(num_train_timesteps=1000)
    schedule.set_timesteps(steps)
    c = torch.from_numpy(np.asarray(conds, np.float32))
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn((len(c), 3, 32, 32), generator=gen)
    both = torch.cat([c, model.null.expand_as(c)])
    for t in schedule.timesteps:
        eps_c, eps_u = model(torch.cat([x, x]), t.expand(2 * len(c)), both).chunk(2)
        x = schedule.step(eps_u + (1 + guidance) * (eps_c - eps_u), t, x).prev_sample
    return ((x.clamp(-1, 1) + 1) / 2).numpy()


def nearest_training_image(conds: np.ndarray, gallery: np.ndarray, images: np.ndarray
                           ) -> np.ndarray:
    """retrieval_only: the training image whose embedding is nearest each condition."""
    return images[np.argmax(conds @ gallery.T, axis=1)]
