"""The score network: an SE(3)-equivariant graph network (e3nn tensor products) over the
ligand's points (each fragment's atoms and dummies, placed by the fragment frames), the
pocket's heavy atoms within reach, and the binding site's centre (a virtual node every point
hears, so a fragment far from the pocket still knows where to go). Pocket atoms and the
centre only send messages; ligand points update.

Outputs per fragment: a translation score (the mean of its points' output vectors) and a
rotation score (the mean torque of its points' second output vectors about its centre).
Rotating the whole complex rotates both, so the scores are equivariant by construction.
"""
from __future__ import annotations

import math

import torch
from e3nn import o3
from torch import nn

LIGAND_ELEMENTS = (6, 7, 8, 9, 15, 16, 17, 35, 53)
N_LIGAND = len(LIGAND_ELEMENTS) + 1 + 1      # element (+ other) + is-dummy
N_POCKET = 5                                 # C N O S other
RBF = 16
CUTOFF = 6.0
FAR = 20.0   # the binding site's centre reaches every ligand point, near or far


def element_index(z: int) -> int:
    return LIGAND_ELEMENTS.index(z) if z in LIGAND_ELEMENTS else len(LIGAND_ELEMENTS)


def rbf(d: torch.Tensor, cutoff: float = CUTOFF) -> torch.Tensor:
    centres = torch.linspace(0, cutoff, RBF)
    return torch.exp(-((d[:, None] - centres) / (cutoff / RBF)) ** 2)


def sigma_embedding(sigma: float, n: int = 8) -> torch.Tensor:
    """Sinusoidal features of log sigma (the noise level the network is told)."""
    freq = torch.arange(n // 2).to(torch.get_default_dtype())
    x = math.log(sigma) * (2.0 ** freq)
    return torch.cat([torch.sin(x), torch.cos(x)])


class Conv(nn.Module):
    """Messages src -> dst: x_src (x) Y(r_dst - r_src), weights from the edge length and
    both ends' scalars; mean over incoming edges, added to dst."""

    def __init__(self, irreps_src: str, irreps_dst: str, irreps_out: str, scalars: int,
                 cutoff: float = CUTOFF):
        super().__init__()
        self.cutoff = cutoff
        self.sh = o3.Irreps.spherical_harmonics(1)
        self.tp = o3.FullyConnectedTensorProduct(irreps_src, self.sh, irreps_out,
                                                 shared_weights=False)
        self.radial = nn.Sequential(nn.Linear(RBF + 2 * scalars, 64), nn.SiLU(),
                                    nn.Linear(64, self.tp.weight_numel))
        self.skip = o3.Linear(irreps_dst, irreps_out)
        self.scalars = scalars

    def forward(self, x_src, pos_src, x_dst, pos_dst, src, dst) -> torch.Tensor:
        vec = pos_dst[dst] - pos_src[src]
        sh = o3.spherical_harmonics(self.sh, vec, normalize=True, normalization="component")
        w = self.radial(torch.cat([rbf(vec.norm(dim=1), self.cutoff), x_src[src, :self.scalars],
                                   x_dst[dst, :self.scalars]], 1))
        msg = self.tp(x_src[src], sh, w)
        total = torch.zeros(len(x_dst), msg.shape[1]).index_add_(0, dst, msg)
        count = torch.zeros(len(x_dst)).index_add_(0, dst, torch.ones(len(dst)))
        return self.skip(x_dst) + total / count.clamp_min(1)[:, None]


class ScoreNet(nn.Module):
    """`forward(points, kinds, frag_of, centres, pocket_pos, pocket_types, sigma, site)` ->
    (translation scores (F, 3), rotation scores (F, 3))."""

    def __init__(self, scalars: int = 16, vectors: int = 4, layers: int = 2):
        super().__init__()
        hidden = f"{scalars}x0e + {vectors}x1o + {vectors}x1e"
        self.scalars = scalars
        self.lig_in = nn.Linear(N_LIGAND + 8, scalars)
        self.pocket_in = nn.Linear(N_POCKET, scalars)
        self.from_pocket = nn.ModuleList(Conv(f"{scalars}x0e", hidden, hidden, scalars)
                                         for _ in range(layers))
        self.within = nn.ModuleList(Conv(hidden, hidden, hidden, scalars)
                                    for _ in range(layers))
        self.centre = nn.Parameter(torch.randn(1, scalars))
        self.from_centre = nn.ModuleList(Conv(f"{scalars}x0e", hidden, hidden, scalars,
                                              cutoff=FAR) for _ in range(layers))
        self.out = o3.Linear(hidden, "2x1o")

    def forward(self, points: torch.Tensor, kinds: torch.Tensor, frag_of: torch.Tensor,
                centres: torch.Tensor, pocket_pos: torch.Tensor, pocket_types: torch.Tensor,
                sigma: float, site: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = len(points)
        feats = torch.cat([kinds, sigma_embedding(sigma).expand(n, 8)], 1)
        h = torch.cat([self.lig_in(feats), torch.zeros(n, self.out.irreps_in.dim -
                                                       self.scalars)], 1)
        pocket = self.pocket_in(nn.functional.one_hot(pocket_types, N_POCKET).to(points.dtype))
        d = torch.cdist(pocket_pos, points)                                # (P, n)
        p_src, p_dst = torch.nonzero(d < CUTOFF, as_tuple=True)
        dl = torch.cdist(points, points)
        l_src, l_dst = torch.nonzero((dl < CUTOFF) & (dl > 0), as_tuple=True)
        c_src, c_dst = torch.zeros(n, dtype=torch.long), torch.arange(n)
        for from_pocket, within, from_centre in zip(self.from_pocket, self.within,
                                                    self.from_centre):
            h = from_centre(self.centre, site[None], h, points, c_src, c_dst)
            h = from_pocket(pocket, pocket_pos, h, points, p_src, p_dst)
            h = within(h, points, h, points, l_src, l_dst)
        out = self.out(h)                                                   # (n, 6)
        move, turn = out[:, :3], out[:, 3:]
        count = torch.zeros(len(centres)).index_add_(0, frag_of, torch.ones(n))[:, None]
        tr = torch.zeros(len(centres), 3).index_add_(0, frag_of, move) / count
        torque = torch.linalg.cross(points - centres[frag_of], turn)
        rot = torch.zeros(len(centres), 3).index_add_(0, frag_of, torque) / count
        return tr, rot
