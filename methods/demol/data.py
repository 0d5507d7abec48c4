"""The molecule sets, each as (SMILES, target values) in the target's own units, and the
scaffold split.

- `qm9_gap`, `qm9_mu`: the first 499 molecules of QM9 (DFT, B3LYP/6-31G(2df,p)) in the shared
  data: HOMO-LUMO gap (Hartree, reported in eV) and dipole moment (Debye).
- `esol`: 1128 measured aqueous solubilities (log10 mol/L, Delaney 2004), shared data.
- `xtb_gap`, `xtb_dipole`: GFN2-xTB gap (eV) and dipole (Debye) computed here with tblite for
  small molecules from RDKit's bundled NCI set (see `xtb.py`).
- a user's CSV (`data`): a `smiles` column and the target column named by `column`.
"""
from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import numpy as np
from rdkit import Chem
from rdkit.Chem.Scaffolds import MurckoScaffold

from edgert.runtime.plugin import DataError
from edgert.methods.cache import recordings_folder

HARTREE_EV = 27.211386
TARGETS = ("qm9_gap", "qm9_mu", "esol", "xtb_gap", "xtb_dipole")


def load(target: str, n_xtb: int = 600, data: str | None = None,
         column: str | None = None) -> tuple[list[str], np.ndarray]:
    """(SMILES, values) of a target, or of a user's CSV when `data` is given."""
    if data:
        return read_csv(Path(data), column or "target")
    if target.startswith("qm9_"):
        smiles, values = read_csv(recordings_folder() / "molprops/qm9/mol_multitask.csv",
                                  "gap" if target == "qm9_gap" else "mu")
        return smiles, values * HARTREE_EV if target == "qm9_gap" else values
    if target == "esol":
        return read_csv(recordings_folder() / "molprops/esol/delaney-processed.csv",
                        "measured log solubility in mols per litre")
    if target.startswith("xtb_"):
        from edgert.methods.demol.xtb import labels

        smiles, gap, dipole = labels(n_xtb)
        return smiles, gap if target == "xtb_gap" else dipole
    raise ValueError(f"unknown target {target!r}: one of {', '.join(TARGETS)}")


def read_csv(path: Path, column: str) -> tuple[list[str], np.ndarray]:
    """SMILES and one numeric column of a CSV; rows RDKit cannot parse are an error naming
    the row, so a user fixes the file rather than losing molecules silently."""
    if not path.exists():
        raise DataError(f"{path}: no such file (give a CSV with a 'smiles' column)")
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or "smiles" not in rows[0] or column not in rows[0]:
        have = ", ".join(rows[0]) if rows else "nothing"
        raise DataError(f"{path}: needs columns 'smiles' and {column!r}; it has {have}")
    smiles, values = [], []
    for i, row in enumerate(rows, start=2):
        s = row["smiles"].strip()
        if Chem.MolFromSmiles(s) is None:
            raise DataError(f"{path}, line {i}: RDKit cannot parse SMILES {s!r}")
        try:
            values.append(float(row[column]))
        except ValueError:
            raise DataError(f"{path}, line {i}: {column}={row[column]!r} is not a number") \
                from None
        smiles.append(s)
    return smiles, np.asarray(values, np.float64)


def scaffold_split(smiles: list[str], seed: int, valid: float = 0.1, test: float = 0.2
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bemis-Murcko scaffold split: molecules sharing a scaffold stay on one side. Scaffold
    groups fill test and validation from the smallest up, in an order shuffled by `seed`
    among groups of equal size; the largest groups train. Test molecules therefore have
    scaffolds the model never saw."""
    groups = defaultdict(list)
    for i, s in enumerate(smiles):
        groups[MurckoScaffold.MurckoScaffoldSmiles(smiles=s, includeChirality=False)].append(i)
    rng = np.random.default_rng(seed)
    order = sorted(groups.values(), key=lambda g: (len(g), rng.random()))
    n = len(smiles)
    test_idx, valid_idx, train_idx = [], [], []
    for g in order:
        if len(test_idx) + len(g) <= test * n:
            test_idx += g
        elif len(valid_idx) + len(g) <= valid * n:
            valid_idx += g
        else:
            train_idx += g
    return np.array(train_idx), np.array(valid_idx), np.array(test_idx)
