"""A ligand cut into rigid fragments at its rotatable bonds (RDKit): rings, double bonds,
amides and other planar groups stay whole. Each fragment also carries the atom across each of
its cut bonds (a dummy): when fragments are placed so that every dummy sits on the real atom
it copies, the cut bonds have their length and their bond angles, and only the torsions are
free. That is bond closure."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rdkit import Chem

ROTATABLE = Chem.MolFromSmarts("[!D1&!$(*#*)]-&!@[!D1&!$(*#*)]")
AMIDE = Chem.MolFromSmarts("C(=O)-&!@N")


@dataclass
class Fragments:
    """members[f]: the fragment's own atoms; atoms[f]: its own atoms then its dummies;
    dummy_of[f]: for each dummy, the real atom it copies (= atoms[f][len(members[f]):]);
    cuts: the rotatable bonds cut (atom pairs)."""

    members: list[list[int]]
    atoms: list[list[int]]
    cuts: list[tuple[int, int]]

    @property
    def count(self) -> int:
        return len(self.members)


def rotatable_bonds(mol: Chem.Mol) -> list[tuple[int, int]]:
    """Single, acyclic bonds between non-terminal atoms, amide C-N bonds excepted (planar)."""
    amide = {frozenset((m[0], m[2])) for m in mol.GetSubstructMatches(AMIDE)}
    return [tuple(m) for m in mol.GetSubstructMatches(ROTATABLE)
            if frozenset(m) not in amide]


def fragment(mol: Chem.Mol) -> Fragments:
    cuts = rotatable_bonds(mol)
    if cuts:
        bonds = [mol.GetBondBetweenAtoms(a, b).GetIdx() for a, b in cuts]
        pieces = Chem.FragmentOnBonds(mol, bonds, addDummies=False)
        members = [sorted(f) for f in Chem.GetMolFrags(pieces, asMols=False)]
    else:
        members = [list(range(mol.GetNumAtoms()))]
    atoms = []
    for own in members:
        inside = set(own)
        dummies = [b if a in inside else a for a, b in cuts if (a in inside) != (b in inside)]
        atoms.append(own + dummies)
    return Fragments(members, atoms, cuts)


def local_frames(frags: Fragments, pos: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Each fragment's atom coordinates (own + dummies) about its own atoms' centroid, and
    the centroids (F, 3): the fragment's frame is (identity, centroid) in this pose."""
    centres = np.stack([pos[m].mean(0) for m in frags.members])
    return [pos[a] - c for a, c in zip(frags.atoms, centres)], centres


def kabsch(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The rotation R minimising |R a_i - b_i| for centred point sets (n, 3)."""
    u, _, vt = np.linalg.svd(a.T @ b)
    d = np.sign(np.linalg.det(vt.T @ u.T))
    return vt.T @ np.diag([1, 1, d]) @ u.T
