"""One cell of the sigmadock job: one docking method over every complex (redocking each
crystal ligand into its own pocket from a fresh RDKit conformer).

Methods (`method`): `sigmadock` (fragment frames, SE(3) diffusion, bond closure),
`atom_diffusion` (the same network and schedule over single atoms, translations only) and
`vina` (AutoDock Vina, where it installs).

The diffusion models are trained here on the complexes themselves: redocking with conformer
augmentation (`conformers` RDKit conformers per ligand, each fragment's true frame fitted to
the crystal) and random rotations of the whole complex. Each draws `samples` poses per
complex; the top-ranked pose is the one with the smallest closure gap plus clash with the
pocket (Vina: its own best score).

Metrics (over complexes): `top1_rmsd_lt2` (heavy-atom RMSD to the crystal under 2 A,
symmetry-aware), `top1_pb_valid` (every PoseBusters check passes), `top1_success` (both),
`all_pb_valid` (share of all poses PB-valid), `best_rmsd_lt2` (any pose under 2 A),
`median_rmsd` (top-1), `seconds_per_complex`; `train_loss` for the diffusion models.
"""
from __future__ import annotations

import csv
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from pydantic import BaseModel, Field
from rdkit import Chem
from rdkit.Chem import rdMolAlign
from scipy.spatial.transform import Rotation

from edgert.methods.sigmadock import figures
from edgert.methods.sigmadock.complexes import load_all, residues_near
from edgert.methods.sigmadock.diffusion import loss, sample
from edgert.methods.sigmadock.model import ScoreNet
from edgert.methods.sigmadock.prepare import Prepared, prepare
from edgert.methods.threads import one_thread

METHODS = ("sigmadock", "atom_diffusion", "vina")


class Config(BaseModel):
    """`data`: a folder of complex folders (default: the shared PoseBusters complexes)."""

    method: str = Field("sigmadock", pattern="|".join(METHODS))
    train_steps: int = Field(1000, ge=1)
    lr: float = Field(2e-3, gt=0)
    conformers: int = Field(6, ge=1)
    samples: int = Field(6, ge=1)
    steps: int = Field(20, ge=2)
    exhaustiveness: int = Field(8, ge=1)
    radius: float = Field(8.0, gt=0)
    data: str | None = None


def grid(quick: bool) -> list[dict]:
    """The three methods; the full grid trains four times longer and draws more poses."""
    base = Config() if quick else Config(train_steps=6000, samples=16, steps=40)
    return [base.model_copy(update={"method": m}).model_dump() for m in METHODS]


def run(config: dict, seed: int, out: Path) -> dict[str, float]:
    cfg = Config(**config)
    with one_thread():
        return _run(cfg, seed, out)


def _run(cfg: Config, seed: int, out: Path) -> dict[str, float]:
    complexes = load_all(cfg.data, cfg.radius)
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    metrics: dict[str, float] = {}
    if cfg.method == "vina":
        from edgert.methods.sigmadock.vina_baseline import dock

        start = time.perf_counter()
        ranked = [dock(c, seed, cfg.exhaustiveness, cfg.samples) for c in complexes]
        elapsed = time.perf_counter() - start
    else:
        prepared = [prepare(c, cfg.method == "atom_diffusion", cfg.conformers, seed)
                    for c in complexes]
        net = ScoreNet()
        metrics["train_loss"] = train(net, prepared, cfg, rng)
        start = time.perf_counter()
        ranked = [draw(net, p, cfg, rng) for p in prepared]
        elapsed = time.perf_counter() - start
    rows = evaluate(complexes, ranked)
    _table(out / "complexes.csv", rows)
    figures.rmsd(rows, cfg.method, out / "rmsd.png")
    top = [r["top1_rmsd"] for r in rows]
    metrics |= {
        "top1_rmsd_lt2": float(np.mean([r < 2 for r in top])),
        "top1_pb_valid": float(np.mean([r["top1_pb_valid"] for r in rows])),
        "top1_success": float(np.mean([r["top1_pb_valid"] and r["top1_rmsd"] < 2
                                       for r in rows])),
        "all_pb_valid": float(np.mean([r["all_pb_valid"] for r in rows])),
        "best_rmsd_lt2": float(np.mean([r["best_rmsd"] < 2 for r in rows])),
        "median_rmsd": float(np.median(top)),
        "seconds_per_complex": elapsed / len(complexes),
    }
    return metrics


def train(net: ScoreNet, prepared: list[Prepared], cfg: Config, rng: np.random.Generator
          ) -> float:
    """Denoising score matching over complexes, conformers and random global rotations ->
    the mean loss of the last tenth of the steps."""
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg.train_steps)
    tail = []
    for step in range(cfg.train_steps):
        p = prepared[rng.integers(len(prepared))]
        k = rng.integers(len(p.ligands))
        q = Rotation.random(random_state=rng)
        rot, trans = p.truths[k]
        pocket = torch.as_tensor(q.apply(p.pocket_pos.numpy() - p.centre) + p.centre,
                                 dtype=torch.float32)
        value = loss(net, p.ligands[k], q * rot, q.apply(trans - p.centre) + p.centre, pocket,
                     p.pocket_types, p.centre, rng)
        opt.zero_grad()
        value.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
        opt.step()
        sched.step()
        if step >= cfg.train_steps * 0.9:
            tail.append(float(value.detach()))
    return float(np.mean(tail))


def draw(net: ScoreNet, p: Prepared, cfg: Config, rng: np.random.Generator) -> list[Chem.Mol]:
    """`samples` poses, best-ranked first: smallest closure gap plus clash with the pocket."""
    lig, n_atoms = p.sampling, p.complex.ligand.GetNumAtoms()
    pocket = p.pocket_pos.numpy()
    scored = []
    for _ in range(cfg.samples):
        rot, trans = sample(net, lig, p.centre, p.pocket_pos, p.pocket_types, cfg.steps, rng)
        coords = lig.coordinates(rot, trans, n_atoms)
        pts = lig.points(rot, trans)
        dummies, reals = lig.closure_pairs()
        gap = float(np.linalg.norm(pts[dummies] - pts[reals], axis=1).sum()) if len(dummies) \
            else _bond_strain(p.complex.ligand, coords)
        near = np.linalg.norm(coords[:, None] - pocket[None], axis=2)
        clash = float((np.clip(3.0 - near, 0, None) ** 2).sum())
        pose = Chem.Mol(p.complex.ligand)
        pose.GetConformer().SetPositions(coords)
        scored.append((gap + clash, pose))
    return [pose for _, pose in sorted(scored, key=lambda s: s[0])]


def _bond_strain(mol: Chem.Mol, coords: np.ndarray) -> float:
    """Atom-level poses have no closure gap: the bonds' deviation from their crystal
    lengths plays that part in the ranking."""
    ref = mol.GetConformer().GetPositions()
    total = 0.0
    for b in mol.GetBonds():
        i, j = b.GetBeginAtomIdx(), b.GetEndAtomIdx()
        total += abs(np.linalg.norm(coords[i] - coords[j]) - np.linalg.norm(ref[i] - ref[j]))
    return total


def evaluate(complexes: list, ranked: list[list[Chem.Mol]]) -> list[dict]:
    """RMSD of every pose to the crystal ligand and PoseBusters' checks against the protein
    (its residues within 12 A of the site: the checks look no farther, and a 20,000-atom
    protein would take most of the job's time to load)."""
    from posebusters import PoseBusters

    buster = PoseBusters(config="dock")
    rows = []
    for c, poses in zip(complexes, ranked):
        rmsd = [rdMolAlign.CalcRMS(pose, c.ligand) for pose in poses]
        with tempfile.TemporaryDirectory() as tmp:
            site = Path(tmp) / "site.pdb"
            site.write_text("\n".join(r[0] for r in residues_near(c)) + "\nEND\n")
            checks = buster.bust(poses, None, str(site), full_report=False)
        valid = checks.all(axis=1).to_numpy()
        rows.append({"complex": c.name, "top1_rmsd": float(rmsd[0]),
                     "top1_pb_valid": bool(valid[0]), "all_pb_valid": float(valid.mean()),
                     "best_rmsd": float(min(rmsd)), "rmsd": [float(r) for r in rmsd],
                     "pb_valid": [bool(v) for v in valid]})
    return rows


def _table(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["complex", "top1_rmsd", "top1_pb_valid", "best_rmsd", "all_pb_valid"])
        for r in rows:
            w.writerow([r["complex"], f"{r['top1_rmsd']:.3f}", int(r["top1_pb_valid"]),
                        f"{r['best_rmsd']:.3f}", f"{r['all_pb_valid']:.3f}"])
