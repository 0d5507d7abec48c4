"""From a complex to training and sampling material: ligand conformers (conformer
augmentation), fragments, each fragment's true frame in the crystal pose, and the pocket as
tensors."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from rdkit import Chem
from rdkit.Chem import AllChem
from scipy.spatial.transform import Rotation

from edgert.methods.sigmadock.complexes import Complex
from edgert.methods.sigmadock.diffusion import Ligand
from edgert.methods.sigmadock.fragments import Fragments, fragment, kabsch, local_frames


@dataclass
class Prepared:
    complex: Complex
    ligands: list[Ligand]            # one per training conformer
    truths: list[tuple[Rotation, np.ndarray]]
    sampling: Ligand                 # a conformer not used in training
    pocket_pos: torch.Tensor
    pocket_types: torch.Tensor
    centre: np.ndarray               # pocket centre (A)


def atoms_as_fragments(mol: Chem.Mol) -> Fragments:
    """Atom-level diffusion: every heavy atom on its own, nothing cut."""
    n = mol.GetNumAtoms()
    return Fragments([[i] for i in range(n)], [[i] for i in range(n)], [])


def conformers(mol: Chem.Mol, n: int, seed: int) -> list[np.ndarray]:
    """n ETKDG conformers (heavy-atom coordinates, the crystal's atom order), stereo kept."""
    Chem.AssignStereochemistryFrom3D(mol)
    h = Chem.AddHs(mol)
    params = AllChem.ETKDGv3()
    params.randomSeed = seed
    ids = list(AllChem.EmbedMultipleConfs(h, n, params))
    if not ids:
        params.useRandomCoords = True
        ids = list(AllChem.EmbedMultipleConfs(h, n, params))
    heavy = [a.GetIdx() for a in h.GetAtoms() if a.GetAtomicNum() > 1]
    return [h.GetConformer(i).GetPositions()[heavy] for i in ids]


def prepare(c: Complex, atom_level: bool, n_conformers: int, seed: int) -> Prepared:
    mol = c.ligand
    crystal = mol.GetConformer().GetPositions()
    frags = atoms_as_fragments(mol) if atom_level else fragment(mol)
    pool = conformers(Chem.Mol(mol), n_conformers + 1, seed)
    ligands, truths = [], []
    for pos in pool[:-1] if len(pool) > 1 else pool:
        local, _ = local_frames(frags, pos)
        if atom_level:
            local = [np.zeros((1, 3)) for _ in local]
        ligands.append(Ligand.make(mol, frags, local, rotate=not atom_level))
        truths.append(true_frames(frags, local, crystal, atom_level))
    local, _ = local_frames(frags, pool[-1])
    if atom_level:
        local = [np.zeros((1, 3)) for _ in local]
    sampling = Ligand.make(mol, frags, local, rotate=not atom_level)
    return Prepared(c, ligands, truths, sampling,
                    torch.as_tensor(c.pocket_pos, dtype=torch.float32),
                    torch.as_tensor(c.pocket_types), crystal.mean(0))


def true_frames(frags: Fragments, local: list[np.ndarray], crystal: np.ndarray,
                atom_level: bool) -> tuple[Rotation, np.ndarray]:
    """Each fragment's frame that best places its conformer coordinates on the crystal."""
    trans = np.stack([crystal[m].mean(0) for m in frags.members])
    if atom_level:
        return Rotation.identity(frags.count), trans
    mats = [kabsch(loc, crystal[a] - t) for loc, a, t in zip(local, frags.atoms, trans)]
    return Rotation.from_matrix(np.stack(mats)), trans
