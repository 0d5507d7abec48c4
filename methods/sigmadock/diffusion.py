"""SE(3) diffusion of fragment frames: Gaussian noise on each fragment's position and IGSO(3)
noise on its orientation (variance exploding, geometric schedules), the training targets,
and reverse sampling with bond closure. Atom-level diffusion is the same code with one atom
per fragment and no rotations.

A ligand's state is `Pose`: each fragment's local coordinates (from an RDKit conformer,
rigid) placed by its frame (R_f, t_f).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from rdkit import Chem
from scipy.spatial.transform import Rotation

from edgert.methods.sigmadock import so3
from edgert.methods.sigmadock.fragments import Fragments
from edgert.methods.sigmadock.model import N_LIGAND, ScoreNet, element_index

TR_MIN, TR_MAX = 0.1, 4.0        # A
CONTACT = 2.8                    # A: closer to a protein heavy atom is a clash
INNER = 3.0                      # A: closer between ligand atoms 4+ bonds apart is a clash
ROT_MIN, ROT_MAX = 0.05, 1.6     # rad


def sigmas(t: float) -> tuple[float, float]:
    """Translation and rotation spreads at diffusion time t in [0, 1]."""
    return TR_MIN ** (1 - t) * TR_MAX ** t, ROT_MIN ** (1 - t) * ROT_MAX ** t


@dataclass
class Ligand:
    """What sampling needs of a ligand cut into fragments: local coordinates per fragment,
    the point features, and which point is a dummy of which real point."""

    frags: Fragments
    local: list[np.ndarray]          # per fragment (k_f, 3)
    kinds: torch.Tensor              # (points, N_LIGAND)
    frag_of: torch.Tensor            # (points,)
    atom_of: np.ndarray              # (points,) ligand atom index of each point
    own: np.ndarray                  # (points,) True for a fragment's own atoms
    apart: np.ndarray                # (pairs, 2) own points 4+ bonds apart (may not touch)
    rotate: bool = True

    @classmethod
    def make(cls, mol, frags: Fragments, local: list[np.ndarray], rotate: bool = True):
        atom_of = np.concatenate([np.array(a) for a in frags.atoms])
        own = np.concatenate([np.arange(len(a)) < len(m)
                              for a, m in zip(frags.atoms, frags.members)])
        kinds = torch.zeros(len(atom_of), N_LIGAND)
        for i, (a, o) in enumerate(zip(atom_of, own)):
            kinds[i, element_index(mol.GetAtomWithIdx(int(a)).GetAtomicNum())] = 1
            kinds[i, -1] = float(not o)
        frag_of = torch.as_tensor(np.concatenate([np.full(len(a), f)
                                                  for f, a in enumerate(frags.atoms)]))
        point = {int(a): i for i, (a, o) in enumerate(zip(atom_of, own)) if o}
        topo = Chem.GetDistanceMatrix(mol)
        apart = np.array([(point[i], point[j]) for i, j in zip(*np.triu_indices(len(topo), 1))
                          if topo[i, j] >= 4], dtype=int).reshape(-1, 2)
        return cls(frags, local, kinds, frag_of, atom_of, own, apart, rotate)

    def points(self, rot: Rotation, trans: np.ndarray) -> np.ndarray:
        """World coordinates of every point (own atoms and dummies) under the frames."""
        return np.concatenate([rot[f].apply(self.local[f]) + trans[f]
                               for f in range(self.frags.count)])

    def coordinates(self, rot: Rotation, trans: np.ndarray, n_atoms: int) -> np.ndarray:
        """Each ligand atom where its own fragment puts it: (atoms, 3)."""
        pts = self.points(rot, trans)
        out = np.zeros((n_atoms, 3))
        out[self.atom_of[self.own]] = pts[self.own]
        return out

    def closure_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(dummy point, the real point it copies) index pairs."""
        real = {int(a): i for i, (a, o) in enumerate(zip(self.atom_of, self.own)) if o}
        dummies = np.where(~self.own)[0]
        return dummies, np.array([real[int(self.atom_of[d])] for d in dummies], dtype=int)


def scores(net: ScoreNet, lig: Ligand, rot: Rotation, trans: np.ndarray, pocket_pos,
           pocket_types, site: np.ndarray, t: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The network's translation and rotation scores, scaled to the noise level."""
    s_tr, s_rot = sigmas(t)
    pts = torch.as_tensor(lig.points(rot, trans), dtype=torch.float32)
    tr, rt = net(pts, lig.kinds, lig.frag_of, torch.as_tensor(trans, dtype=torch.float32),
                 pocket_pos, pocket_types, s_tr, torch.as_tensor(site, dtype=torch.float32))
    return tr / s_tr, rt * so3_norm(s_rot)


_NORMS: dict[float, float] = {}


def so3_norm(sigma: float) -> float:
    key = round(float(sigma), 4)
    if key not in _NORMS:
        _NORMS[key] = so3.expected_score_norm(sigma)
    return _NORMS[key]


def loss(net: ScoreNet, lig: Ligand, rot_true: Rotation, trans_true: np.ndarray, pocket_pos,
         pocket_types, site: np.ndarray, rng: np.random.Generator) -> torch.Tensor:
    """Denoising score matching at a random time: noise the true frames, ask for the score."""
    t = float(rng.uniform(0.02, 1.0))
    s_tr, s_rot = sigmas(t)
    z = rng.normal(size=trans_true.shape)
    trans = trans_true + s_tr * z
    target_tr = torch.as_tensor(-z / s_tr, dtype=torch.float32)
    if lig.rotate:
        omega = so3.sample(s_rot, len(trans), rng)
        rot = so3.compose(omega, rot_true)
        target_rot = torch.as_tensor(so3.score(omega, s_rot), dtype=torch.float32)
    else:
        rot, target_rot = rot_true, None
    tr, rt = scores(net, lig, rot, trans, pocket_pos, pocket_types, site, t)
    value = ((tr - target_tr) * s_tr).pow(2).sum(1).mean()
    if target_rot is not None:
        value = value + ((rt - target_rot) / so3_norm(s_rot)).pow(2).sum(1).mean()
    return value


def close(lig: Ligand, rot: Rotation, trans: np.ndarray, steps: int, lr: float = 0.05,
          pocket: torch.Tensor | None = None) -> tuple[Rotation, np.ndarray]:
    """Bond closure: move the frames so every dummy lands on the real atom it copies. With
    `pocket`, also push the ligand's own atoms out of the protein (closer than CONTACT A to a
    pocket atom) and apart from each other (atoms 4+ bonds apart closer than INNER A): the
    same steric clearing for fragments and single atoms."""
    dummies, reals = lig.closure_pairs()
    if len(dummies) == 0 and pocket is None:
        return rot, trans
    local = [torch.as_tensor(x, dtype=torch.float32) for x in lig.local]
    base = torch.as_tensor(rot.as_matrix(), dtype=torch.float32)
    t0 = torch.as_tensor(trans, dtype=torch.float32)
    own = torch.as_tensor(lig.own)
    d_rot = torch.zeros(len(trans), 3, requires_grad=True)
    d_tr = torch.zeros(len(trans), 3, requires_grad=True)
    opt = torch.optim.Adam([d_rot, d_tr], lr=lr)
    for _ in range(steps):
        mats = _exp(d_rot) @ base
        pts = torch.cat([local[f] @ mats[f].T + t0[f] + d_tr[f] for f in range(len(local))])
        value = (pts[dummies] - pts[reals]).pow(2).sum(1).mean() if len(dummies) else \
            torch.zeros(())
        if pocket is not None:
            near = torch.cdist(pts[own], pocket)
            value = value + torch.relu(CONTACT - near).pow(2).sum()
            if len(lig.apart):
                inner = (pts[lig.apart[:, 0]] - pts[lig.apart[:, 1]]).norm(dim=1)
                value = value + torch.relu(INNER - inner).pow(2).sum()
        opt.zero_grad()
        value.backward()
        opt.step()
    with torch.no_grad():
        mats = _exp(d_rot) @ base
    return Rotation.from_matrix(mats.numpy().astype(np.float64)), (t0 + d_tr).detach().numpy()


def _exp(v: torch.Tensor) -> torch.Tensor:
    """Rotation matrices from rotation vectors (Rodrigues), differentiable: (F, 3) -> (F, 3, 3)."""
    theta = v.norm(dim=1, keepdim=True).clamp_min(1e-8)
    k = v / theta
    kx = torch.zeros(len(v), 3, 3)
    kx[:, 0, 1], kx[:, 0, 2], kx[:, 1, 2] = -k[:, 2], k[:, 1], -k[:, 0]
    kx = kx - kx.transpose(1, 2)
    s, c = torch.sin(theta)[:, :, None], torch.cos(theta)[:, :, None]
    return torch.eye(3) + s * kx + (1 - c) * kx @ kx


@torch.no_grad()
def sample(net: ScoreNet, lig: Ligand, centre: np.ndarray, pocket_pos, pocket_types,
           steps: int, rng: np.random.Generator, closure_below: float = 1.0
           ) -> tuple[Rotation, np.ndarray]:
    """Reverse diffusion from frames spread about the pocket centre (random orientations),
    Euler-Maruyama in position and in orientation, closing bonds once the positions are
    within `closure_below` A of noise, and at the end closing them fully while clearing
    clashes with the pocket (single atoms get the same clash clearing)."""
    n = lig.frags.count
    trans = centre + TR_MAX * rng.normal(size=(n, 3))
    rot = Rotation.random(n, random_state=rng) if lig.rotate else Rotation.identity(n)
    times = np.linspace(1.0, 0.0, steps + 1)
    for k in range(steps):
        t, t_next = times[k], times[k + 1]
        (tr_a, rot_a), (tr_b, rot_b) = sigmas(t), sigmas(t_next)
        last = k == steps - 1
        d_tr = tr_a ** 2 - (tr_b ** 2 if not last else 0.0)
        s_tr, s_rot = scores(net, lig, rot, trans, pocket_pos, pocket_types, centre, t)
        trans = trans + d_tr * s_tr.numpy() + (0 if last else np.sqrt(d_tr)) * \
            rng.normal(size=trans.shape)
        if lig.rotate:
            d_rot = rot_a ** 2 - (rot_b ** 2 if not last else 0.0)
            omega = d_rot * s_rot.numpy() + (0 if last else np.sqrt(d_rot)) * \
                rng.normal(size=trans.shape)
            rot = so3.compose(omega, rot)
        if tr_b < closure_below and lig.rotate:
            with torch.enable_grad():
                rot, trans = close(lig, rot, trans, steps=10)
    with torch.enable_grad():
        rot, trans = close(lig, rot, trans, steps=200, pocket=pocket_pos)
    return rot, trans
