"""The demol job: the dual graph of real molecules, the scaffold split, the covalent band,
GFN2-xTB labels from tblite, a user's CSV read with clear errors, and tiny cells through the
runner."""
import csv
import json

import numpy as np
import pytest

pytest.importorskip("rdkit", reason="demol needs the batch extra: pip install -e '.[batch]'")
pytest.importorskip("torch_geometric", reason="demol needs the batch extra")

import torch  # noqa: E402
from torch_geometric.loader import DataLoader  # noqa: E402

from edgert.runtime.plugin import DataError  # noqa: E402
from edgert.methods.cache import recordings_folder  # noqa: E402
from edgert.methods.demol.data import read_csv, scaffold_split  # noqa: E402
from edgert.methods.demol.graphs import conformer, featurize, subsets  # noqa: E402
from edgert.methods.demol.job import covalent_penalty  # noqa: E402
from edgert.methods.demol.model import Net, matched_hidden, params  # noqa: E402
from edgert.runtime.batch import run_batch  # noqa: E402

ESOL = recordings_folder() / "molprops/esol/delaney-processed.csv"


def test_dual_graph_of_real_molecules_with_stereo_from_3d():
    propanol = featurize(conformer("CCCO"), 1.0)
    assert propanol.x.shape[0] == 4 and propanol.bond_attr.shape[0] == 3
    assert propanol.line_index.shape[1] == 4, "C-C/C-C and C-C/C-O, both directions"
    nearest = propanol.line_attr.argmax(1)  # tetrahedral, cos ~ -0.33: the -0.2 centre
    assert nearest.tolist() == [2, 2, 2, 2]
    assert torch.all(covalent_penalty(propanol.length, propanol.covalent) == 0)
    butene = conformer("C/C=C/C")
    assert subsets(butene) == {"conjugated": False, "stereo": True}
    assert featurize(butene, 0.0).bond_attr[:, -1].sum() == 1, "the E bond is marked"
    assert subsets(conformer("c1ccccc1O"))["conjugated"]
    batch = next(iter(DataLoader([propanol, featurize(butene, 0.0)], batch_size=2)))
    assert int(batch.bond_atoms[:, 3:].min()) == 4, "second molecule's bonds index its atoms"
    assert int(batch.line_index[:, 4:].min()) == 3 and int(batch.edge_bond[6:].min()) == 3


def test_scaffold_split_keeps_each_scaffold_on_one_side():
    from rdkit.Chem.Scaffolds import MurckoScaffold

    smiles, _ = read_csv(ESOL, "measured log solubility in mols per litre")
    train, valid, test = scaffold_split(smiles, seed=0)
    assert len(train) + len(valid) + len(test) == len(smiles)
    assert 0.15 < len(test) / len(smiles) <= 0.2

    def scaffolds(idx):
        return {MurckoScaffold.MurckoScaffoldSmiles(smiles=smiles[i]) for i in idx}
    assert not scaffolds(train) & scaffolds(test)


def test_covalent_band_and_matched_sizes():
    covalent = torch.tensor([1.52, 1.52, 1.52])
    penalty = covalent_penalty(torch.tensor([1.5, 0.9, 2.5]), covalent)
    assert penalty[0] == 0 and penalty[1] > 0 and penalty[2] > 0
    reference = params(Net("demol", 32, 2))
    for kind in ("atom_only", "bond_only"):
        size = params(Net(kind, matched_hidden(kind, reference, 2), 2))
        assert abs(size - reference) / reference < 0.05


def test_gfn2_xtb_labels_from_tblite(tmp_path, monkeypatch):
    pytest.importorskip("tblite", reason="xTB labels need tblite (the batch extra)")
    from edgert.methods.demol.xtb import gfn2, labels

    benzene, hexane = gfn2("c1ccccc1"), gfn2("CCCCCC")
    assert 3 < benzene[0] < hexane[0], "conjugation narrows the gap"
    assert benzene[1] < 0.1 < gfn2("O")[1], "benzene has no dipole, water has"
    monkeypatch.setenv("EDGERT_CACHE", str(tmp_path))
    smiles, gap, dipole = labels(6)
    assert len(smiles) == 6 and (gap > 0).all() and (dipole >= 0).all()
    assert (tmp_path / "demol" / "xtb_6.json").exists()


def test_a_users_csv_is_read_or_refused_with_the_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("smiles,logS\nCCO,-0.5\nC1CC,-1\n")
    with pytest.raises(DataError, match="line 3.*C1CC"):
        read_csv(bad, "logS")
    with pytest.raises(DataError, match="needs columns 'smiles' and 'target'"):
        read_csv(bad, "target")


def test_tiny_cells_through_the_runner_on_a_users_csv(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGERT_CACHE", str(tmp_path / "cache"))
    rows = list(csv.DictReader(ESOL.open()))[:120]
    own = tmp_path / "own.csv"
    with own.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["smiles", "logS"])
        w.writerows([r["smiles"], r["measured log solubility in mols per litre"]] for r in rows)
    base = {"data": str(own), "column": "logS", "hidden": 32, "layers": 2, "epochs": 4}
    result = run_batch("demol", [base | {"model": "demol"}, base | {"model": "atom_only"}],
                       seeds=1, out=tmp_path / "out", workers=1)
    assert not result["failed"], result["failed"]
    for entry in result["summary"].values():
        m = {k: v["mean"] for k, v in entry["metrics"].items()}
        assert 0 < m["mae"] < 5 and m["n_test"] > 10 and 0 <= m["bond_plausible"] <= 1
    cell = json.loads((tmp_path / "out" / "results.json").read_text())["cells"][0]
    assert any(a.endswith("parity.png") for a in cell["artifacts"])
    assert np.isfinite(cell["metrics"]["length_mae"])
