"""GFN2-xTB labels computed here: HOMO-LUMO gap and dipole of small molecules from RDKit's
bundled NCI set, at an MMFF-optimised RDKit conformer, with tblite. Computed once per machine
(about 0.1 s a molecule) and cached; a lock keeps parallel cells from computing twice."""
from __future__ import annotations

import fcntl
import json
import logging
import os

import numpy as np
from rdkit import Chem, RDConfig, RDLogger
from rdkit.Chem import AllChem

from edgert.methods.cache import cache_folder

BOHR = 0.52917721
HARTREE_EV = 27.211386
AU_DEBYE = 2.541746
ELEMENTS = {1, 6, 7, 8, 9, 16, 17}
log = logging.getLogger(__name__)


def candidates(n: int) -> list[str]:
    """n neutral one-fragment molecules of H C N O F S Cl from NCI first_5K, as canonical
    SMILES: those of 3-12 heavy atoms first (in file order), then those of 13-20 when more
    are asked for (the set has about 1500 of the first kind and 3400 in all)."""
    path = os.path.join(RDConfig.RDDataDir, "NCI", "first_5K.smi")
    small, larger = [], []
    RDLogger.DisableLog("rdApp.*")  # the set has a few SMILES RDKit rejects; they are skipped
    for line in open(path):
        smiles = line.split()[0]
        mol = Chem.MolFromSmiles(smiles)
        if mol is None or "." in smiles or Chem.GetFormalCharge(mol) != 0:
            continue
        if any(a.GetAtomicNum() not in ELEMENTS for a in mol.GetAtoms()):
            continue
        size = mol.GetNumHeavyAtoms()
        if 3 <= size <= 12:
            small.append(Chem.MolToSmiles(mol))
        elif 12 < size <= 20:
            larger.append(Chem.MolToSmiles(mol))
    return (small + larger)[:n]


def gfn2(smiles: str) -> tuple[float, float] | None:
    """(gap eV, dipole Debye) at an MMFF conformer, or None if embedding or SCF fails."""
    from tblite.interface import Calculator

    mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
    if AllChem.EmbedMolecule(mol, randomSeed=0) != 0:
        return None
    AllChem.MMFFOptimizeMolecule(mol)
    numbers = np.array([a.GetAtomicNum() for a in mol.GetAtoms()])
    calc = Calculator("GFN2-xTB", numbers, mol.GetConformer().GetPositions() / BOHR)
    calc.set("verbosity", 0)
    try:
        res = calc.singlepoint()
    except RuntimeError:
        return None
    energies, occupied = res.get("orbital-energies"), res.get("orbital-occupations") > 1e-3
    gap = (energies[~occupied].min() - energies[occupied].max()) * HARTREE_EV
    return float(gap), float(np.linalg.norm(res.get("dipole")) * AU_DEBYE)


def labels(n: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(SMILES, gap, dipole) of up to n molecules, from the cache or computed now."""
    folder = cache_folder("demol")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"xtb_{n}.json"
    with open(folder / "xtb.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            log.warning("demol: computing GFN2-xTB labels for %d molecules with tblite, about "
                        "%.0f s, cached in %s", n, 0.1 * n, path)
            rows = [(s, r) for s in candidates(n) if (r := gfn2(s)) is not None]
            path.write_text(json.dumps([[s, g, d] for s, (g, d) in rows]))
    rows = json.loads(path.read_text())
    return ([r[0] for r in rows], np.array([r[1] for r in rows]),
            np.array([r[2] for r in rows]))
