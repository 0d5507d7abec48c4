"""Protein-ligand complexes as the docking job reads them: a folder per complex holding one
protein PDB and the crystal ligand as `*_ligand.sdf` (the layout of the shared PoseBusters
complexes; point `data` at a folder of such folders for more). The pocket is every protein
heavy atom within `radius` of the crystal ligand, as redocking benchmarks define it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rdkit import Chem

from edgert.runtime.plugin import DataError
from edgert.methods.cache import recordings_folder

POCKET_ELEMENTS = ("C", "N", "O", "S")   # anything else: "other"
WATER = {"HOH", "WAT", "DOD"}


@dataclass
class Complex:
    name: str
    ligand: Chem.Mol              # crystal pose, heavy atoms
    protein: Path                 # the PDB, for PoseBusters and Vina
    pocket_pos: np.ndarray        # (P, 3) A
    pocket_types: np.ndarray      # (P,) index into POCKET_ELEMENTS (+1 = other)


def folder(data: str | None) -> Path:
    return Path(data) if data else recordings_folder() / "docking"


def load_all(data: str | None = None, radius: float = 8.0) -> list[Complex]:
    """Every complex under the folder, sorted by name."""
    root = folder(data)
    if not root.is_dir():
        raise DataError(f"{root}: no such folder of complexes (one sub-folder per complex, "
                        "each with a protein .pdb and a *_ligand.sdf)")
    out = [load(d, radius) for d in sorted(root.iterdir()) if d.is_dir()]
    if not out:
        raise DataError(f"{root}: no complex folders in it")
    return out


def load(path: Path, radius: float = 8.0) -> Complex:
    ligands = sorted(path.glob("*_ligand.sdf"))
    proteins = sorted(path.glob("*.pdb"))
    if not ligands or not proteins:
        raise DataError(f"{path}: needs a *_ligand.sdf and a protein .pdb")
    ligand = Chem.MolFromMolFile(str(ligands[0]))
    if ligand is None:
        raise DataError(f"{ligands[0]}: RDKit cannot read this ligand")
    ligand = Chem.RemoveHs(ligand)
    pos, elements = read_pdb(proteins[0])
    lig = ligand.GetConformer().GetPositions()
    near = np.linalg.norm(pos[:, None] - lig[None], axis=2).min(1) < radius
    types = np.array([POCKET_ELEMENTS.index(e) if e in POCKET_ELEMENTS else
                      len(POCKET_ELEMENTS) for e in elements[near]])
    return Complex(path.name, ligand, proteins[0], pos[near], types)


def atom_records(path: Path) -> list[tuple[str, np.ndarray, str]]:
    """(line, coordinates in A, element) of every ATOM and HETATM record of a PDB file."""
    out = []
    for line in path.read_text().splitlines():
        if not line.startswith(("ATOM", "HETATM")):
            continue
        try:
            xyz = np.array([float(line[30:38]), float(line[38:46]), float(line[46:54])])
        except ValueError:
            raise DataError(f"{path}: unreadable coordinates in {line[:27]!r}") from None
        out.append((line, xyz, (line[76:78].strip() or line[12:14].strip()).upper()))
    return out


def read_pdb(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Heavy-atom coordinates (A) and elements of a PDB's ATOM and HETATM records, waters
    and hydrogens left out."""
    kept = [(xyz, element) for line, xyz, element in atom_records(path)
            if line[17:20].strip() not in WATER and element not in ("H", "D")]
    if not kept:
        raise DataError(f"{path}: no ATOM or HETATM records")
    return np.array([k[0] for k in kept]), np.array([k[1] for k in kept])


def residues_near(c: Complex, margin: float = 12.0) -> list[tuple[str, np.ndarray, str]]:
    """The PDB records (line, coordinates, element) of every residue, waters included, with
    an atom within `margin` A of the crystal ligand: what docking and pose checks look at,
    without the rest of a large protein."""
    lig = c.ligand.GetConformer().GetPositions()
    records = atom_records(c.protein)
    keep = {line[17:27] for line, xyz, _ in records
            if np.linalg.norm(lig - xyz, axis=1).min() < margin}
    return [r for r in records if r[0][17:27] in keep]
