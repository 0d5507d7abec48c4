"""A molecule as two graphs over one RDKit conformer.

Atom-centric: heavy atoms are nodes, bonds are edges; atoms two and three bonds apart are
joined by extra edge sets (the larger scales). Bond-centric (the line graph): bonds are
nodes, two bonds sharing an atom are joined, with the angle between them from the conformer.
`bond_atoms` ties each bond to its two atoms, for the messages between the channels.
Stereo (R/S centres, E/Z bonds) is assigned from the 3-D conformer, so both channels see it.
"""
from __future__ import annotations

import numpy as np
import torch
from rdkit import Chem
from rdkit.Chem import AllChem
from torch_geometric.data import Data

ELEMENTS = (6, 7, 8, 9, 15, 16, 17, 35, 53)
HYBRID = (Chem.HybridizationType.SP, Chem.HybridizationType.SP2, Chem.HybridizationType.SP3)
CHIRAL = (Chem.ChiralType.CHI_TETRAHEDRAL_CW, Chem.ChiralType.CHI_TETRAHEDRAL_CCW)
BONDS = (Chem.BondType.SINGLE, Chem.BondType.DOUBLE, Chem.BondType.TRIPLE,
         Chem.BondType.AROMATIC)
STEREO = ((Chem.BondStereo.STEREOZ, Chem.BondStereo.STEREOCIS),
          (Chem.BondStereo.STEREOE, Chem.BondStereo.STEREOTRANS))
ATOM_DIM = len(ELEMENTS) + 1 + 6 + 3 + len(HYBRID) + 1 + 1 + 4 + len(CHIRAL) + 1
BOND_DIM = len(BONDS) + 1 + 1 + len(STEREO)
RBF = 8           # bond-length and distance expansion
ANGLE_RBF = 6
PT = Chem.GetPeriodicTable()


class DualGraph(Data):
    """PyG batching for the index sets: each is offset by the right node count."""

    def __inc__(self, key, value, *args, **kwargs):
        if key in ("edge_index", "hop2_index", "hop3_index", "bond_atoms"):
            return self.num_nodes
        if key in ("line_index", "edge_bond"):
            return self.bond_attr.shape[0]
        return super().__inc__(key, value, *args, **kwargs)

    def __cat_dim__(self, key, value, *args, **kwargs):
        return -1 if key == "bond_atoms" else super().__cat_dim__(key, value, *args, **kwargs)


def _hot(value, options) -> list[float]:
    return [float(value == o) for o in options]


def atom_features(atom: Chem.Atom) -> list[float]:
    z = atom.GetAtomicNum()
    return (_hot(z, ELEMENTS) + [float(z not in ELEMENTS)] + _hot(min(atom.GetDegree(), 5),
            range(6)) + _hot(atom.GetFormalCharge(), (-1, 0, 1)) +
            _hot(atom.GetHybridization(), HYBRID) + [float(atom.GetIsAromatic()),
            float(atom.IsInRing())] + _hot(min(atom.GetTotalNumHs(), 3), range(4)) +
            _hot(atom.GetChiralTag(), CHIRAL) + [float(atom.HasProp("_CIPCode"))])


def bond_features(bond: Chem.Bond) -> list[float]:
    stereo = bond.GetStereo()
    return (_hot(bond.GetBondType(), BONDS) + [float(bond.GetIsConjugated()),
            float(bond.IsInRing())] + [float(stereo in group) for group in STEREO])


def rbf(x: np.ndarray, lo: float, hi: float, n: int) -> np.ndarray:
    """Gaussian expansion of distances or cosines: (k,) -> (k, n)."""
    centres = np.linspace(lo, hi, n)
    width = (hi - lo) / (n - 1)
    return np.exp(-((x[:, None] - centres) / width) ** 2)


def conformer(smiles: str, seed: int = 0) -> Chem.Mol | None:
    """Heavy-atom molecule with an ETKDG + MMFF conformer and stereo from 3-D, or None."""
    mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
    if AllChem.EmbedMolecule(mol, randomSeed=seed) != 0:
        if AllChem.EmbedMolecule(mol, randomSeed=seed, useRandomCoords=True) != 0:
            return None
    if AllChem.MMFFHasAllMoleculeParams(mol):
        AllChem.MMFFOptimizeMolecule(mol)
    mol = Chem.RemoveHs(mol)
    Chem.AssignStereochemistryFrom3D(mol)
    return mol


def covalent_sum(mol: Chem.Mol) -> np.ndarray:
    """Sum of the two atoms' covalent radii (A) for each bond."""
    return np.array([PT.GetRcovalent(b.GetBeginAtom().GetAtomicNum()) +
                     PT.GetRcovalent(b.GetEndAtom().GetAtomicNum()) for b in mol.GetBonds()])


def featurize(mol: Chem.Mol, y: float) -> DualGraph:
    """The dual graph of a molecule with a conformer; `pos` and bond lengths in A."""
    pos = mol.GetConformer().GetPositions()                        # (atoms, 3)
    ends = np.array([[b.GetBeginAtomIdx(), b.GetEndAtomIdx()] for b in mol.GetBonds()],
                    dtype=np.int64).reshape(-1, 2)                 # (bonds, 2)
    length = np.linalg.norm(pos[ends[:, 0]] - pos[ends[:, 1]], axis=1)
    topo = Chem.GetDistanceMatrix(mol)
    hops = [np.argwhere(topo == k).T for k in (2, 3)]
    line, angles = _line_graph(ends, pos)
    g = DualGraph(
        x=torch.tensor([atom_features(a) for a in mol.GetAtoms()], dtype=torch.float32),
        edge_index=torch.as_tensor(np.concatenate([ends, ends[:, ::-1]]).T.copy()),
        edge_bond=torch.arange(len(ends)).repeat(2),               # the bond of each edge
        bond_attr=torch.tensor([bond_features(b) for b in mol.GetBonds()],
                               dtype=torch.float32).reshape(-1, BOND_DIM),
        bond_atoms=torch.as_tensor(ends.T.copy()),
        length=torch.as_tensor(length, dtype=torch.float32),
        covalent=torch.as_tensor(covalent_sum(mol), dtype=torch.float32),
        line_index=torch.as_tensor(line),
        line_attr=torch.as_tensor(rbf(angles, -1.0, 1.0, ANGLE_RBF), dtype=torch.float32),
        pos=torch.as_tensor(pos, dtype=torch.float32),
        y=torch.tensor([y], dtype=torch.float32),
    )
    for k, idx in zip((2, 3), hops):
        d = np.linalg.norm(pos[idx[0]] - pos[idx[1]], axis=1)
        g[f"hop{k}_index"] = torch.as_tensor(idx.astype(np.int64))
        g[f"hop{k}_attr"] = torch.as_tensor(rbf(d, 1.5, 5.0, RBF), dtype=torch.float32)
    return g


def _line_graph(ends: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bond pairs sharing an atom (both directions) and the cosine of their angle at it."""
    pairs, cosines = [], []
    for i in range(len(ends)):
        for j in range(len(ends)):
            if i == j:
                continue
            shared = set(ends[i]) & set(ends[j])
            if not shared:
                continue
            c = shared.pop()
            a = pos[ends[i][ends[i] != c][0]] - pos[c]
            b = pos[ends[j][ends[j] != c][0]] - pos[c]
            pairs.append((i, j))
            cosines.append(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-9))
    if not pairs:
        return np.zeros((2, 0), np.int64), np.zeros(0)
    return np.array(pairs, np.int64).T.copy(), np.array(cosines)


def subsets(mol: Chem.Mol) -> dict[str, bool]:
    """Which bond-sensitive groups a molecule belongs to: conjugated (a conjugated bond
    system of 3 bonds or more) and stereo (a stereocentre or an E/Z double bond)."""
    conjugated = sum(b.GetIsConjugated() for b in mol.GetBonds()) >= 3
    stereo = bool(Chem.FindMolChiralCenters(mol, includeUnassigned=True)) or any(
        b.GetStereo() != Chem.BondStereo.STEREONONE for b in mol.GetBonds())
    return {"conjugated": conjugated, "stereo": stereo}
