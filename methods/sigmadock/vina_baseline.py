"""AutoDock Vina (the `vina` package, ligand prepared by meeko) in a box about the pocket:
the docking program people reach for. The receptor is written as PDBQT from the pocket's
residues with AutoDock atom types; the protein files have no hydrogens, so no donor
hydrogens are typed (Vina's scoring does not need them)."""
from __future__ import annotations

import tempfile
from pathlib import Path

from rdkit import Chem
from rdkit.Chem import AllChem

from edgert.methods.sigmadock.complexes import WATER, Complex, residues_near

AD_TYPES = {"C": "C", "N": "N", "O": "OA", "S": "SA", "P": "P", "F": "F", "CL": "Cl",
            "BR": "Br", "I": "I", "MG": "Mg", "ZN": "Zn", "FE": "Fe", "MN": "Mn", "CA": "Ca"}


def receptor_pdbqt(c: Complex, path: Path, margin: float = 14.0) -> None:
    """Residues with an atom within `margin` A of the crystal ligand, as PDBQT (waters and
    hydrogens left out)."""
    out = []
    for line, _, element in residues_near(c, margin):
        if element in ("H", "D") or line[17:20].strip() in WATER:
            continue
        out.append(f"{line[:54]:<54}  1.00  0.00    +0.000 {AD_TYPES.get(element, 'A'):<2}")
    path.write_text("\n".join(out) + "\n")


def dock(c: Complex, seed: int, exhaustiveness: int = 8, n_poses: int = 8) -> list[Chem.Mol]:
    """Vina's poses of the ligand (heavy atoms, the crystal's atom order), best first."""
    try:
        from meeko import MoleculePreparation, PDBQTMolecule, PDBQTWriterLegacy, RDKitMolCreate
        from vina import Vina
    except ImportError as e:
        raise RuntimeError(f"the vina baseline needs AutoDock Vina and meeko ({e.name} is "
                           "missing): pip install 'edgert[batch]'") from None

    mol = Chem.Mol(c.ligand)
    Chem.AssignStereochemistryFrom3D(mol)
    h = Chem.AddHs(mol)
    AllChem.EmbedMolecule(h, randomSeed=seed)
    setup = MoleculePreparation().prepare(h)[0]
    ligand, ok, err = PDBQTWriterLegacy.write_string(setup)
    if not ok:
        raise RuntimeError(f"{c.name}: meeko could not prepare the ligand: {err}")
    with tempfile.TemporaryDirectory() as tmp:
        receptor = Path(tmp) / "receptor.pdbqt"
        receptor_pdbqt(c, receptor)
        v = Vina(sf_name="vina", cpu=1, seed=seed, verbosity=0)
        v.set_receptor(str(receptor))
        v.set_ligand_from_string(ligand)
        v.compute_vina_maps(center=c.ligand.GetConformer().GetPositions().mean(0).tolist(),
                            box_size=[22.0, 22.0, 22.0])
        v.dock(exhaustiveness=exhaustiveness, n_poses=n_poses)
        poses = v.poses(n_poses=n_poses)
    mols = RDKitMolCreate.from_pdbqt_mol(PDBQTMolecule(poses, skip_typing=True))
    docked = Chem.RemoveHs(mols[0])
    out = []
    order = docked.GetSubstructMatch(c.ligand) or tuple(range(c.ligand.GetNumAtoms()))
    for conf in docked.GetConformers():
        pose = Chem.Mol(c.ligand)
        pose.GetConformer().SetPositions(conf.GetPositions()[list(order)])
        out.append(pose)
    return out
