"""The sigmadock job: IGSO(3) against its small-spread limit, fragments cut where a chemist
would, bond closure restoring valid geometry, an equivariant score network, the complexes'
reader, and tiny cells (diffusion and Vina) through the runner on real complexes."""
import json
import shutil

import numpy as np
import pytest

pytest.importorskip("e3nn", reason="sigmadock needs the batch extra: pip install -e '.[batch]'")
pytest.importorskip("rdkit", reason="sigmadock needs the batch extra")

import torch  # noqa: E402
from rdkit import Chem  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

from edgert.runtime.plugin import DataError  # noqa: E402
from edgert.methods.cache import recordings_folder  # noqa: E402
from edgert.methods.sigmadock import so3  # noqa: E402
from edgert.methods.sigmadock.complexes import load, load_all  # noqa: E402
from edgert.methods.sigmadock.diffusion import close  # noqa: E402
from edgert.methods.sigmadock.fragments import fragment  # noqa: E402
from edgert.methods.sigmadock.model import N_LIGAND, ScoreNet  # noqa: E402
from edgert.methods.sigmadock.prepare import prepare, true_frames  # noqa: E402
from edgert.runtime.batch import run_batch  # noqa: E402

DOCKING = recordings_folder() / "docking"


def test_igso3_matches_the_gaussian_limit_at_small_spread():
    rng = np.random.default_rng(0)
    sigma = 0.1
    omega = np.linalg.norm(so3.sample(sigma, 20000, rng), axis=1)
    assert omega.mean() / sigma == pytest.approx(2 * np.sqrt(2 / np.pi), rel=0.04)
    at = np.array([[sigma, 0.0, 0.0]])
    assert so3.score(at, sigma)[0, 0] == pytest.approx(-1 / sigma, rel=0.1)
    wide = np.linalg.norm(so3.sample(1.6, 20000, rng), axis=1)
    assert 1.2 < wide.mean() < 2.2 and wide.max() <= np.pi


def test_fragments_cut_rotatable_bonds_and_keep_amides_and_rings():
    butane = fragment(Chem.MolFromSmiles("CCCC"))
    assert butane.cuts == [(1, 2)] and butane.count == 2
    assert [len(a) - len(m) for a, m in zip(butane.atoms, butane.members)] == [1, 1]
    amide = fragment(Chem.MolFromSmiles("CC(=O)NC"))
    assert amide.count == 1, "the amide C-N bond is planar: not cut"
    aspirin = fragment(Chem.MolFromSmiles("CC(=O)Oc1ccccc1C(=O)O"))
    ring = {4, 5, 6, 7, 8, 9}
    assert any(ring <= set(m) for m in aspirin.members), "the ring stays whole"


def test_true_frames_rebuild_the_crystal_and_closure_restores_valid_bonds():
    from posebusters import PoseBusters

    c = load(DOCKING / "1ia1")
    p = prepare(c, atom_level=False, n_conformers=2, seed=0)
    lig, crystal = p.sampling, c.ligand.GetConformer().GetPositions()
    rot, trans = true_frames(lig.frags, lig.local, crystal, atom_level=False)
    n = c.ligand.GetNumAtoms()
    assert np.sqrt(((lig.coordinates(rot, trans, n) - crystal) ** 2).sum(1).mean()) < 0.4
    rng = np.random.default_rng(0)
    moved = Rotation.from_rotvec(0.25 * rng.normal(size=(len(trans), 3))) * rot
    shifted = trans + 0.4 * rng.normal(size=trans.shape)
    dummies, reals = lig.closure_pairs()
    gap = np.linalg.norm(lig.points(moved, shifted)[dummies] - lig.points(moved, shifted)[reals],
                         axis=1)
    rot2, trans2 = close(lig, moved, shifted, steps=300)
    pts = lig.points(rot2, trans2)
    assert np.linalg.norm(pts[dummies] - pts[reals], axis=1).max() < 0.05 < gap.max()
    pose = Chem.Mol(c.ligand)
    pose.GetConformer().SetPositions(lig.coordinates(rot2, trans2, n))
    checks = PoseBusters(config="mol").bust([pose], None, None, full_report=False)
    assert bool(checks["bond_lengths"].iloc[0]) and bool(checks["bond_angles"].iloc[0])


def test_the_score_network_is_rotation_equivariant():
    torch.set_default_dtype(torch.float64)
    try:
        torch.manual_seed(0)
        net = ScoreNet()
        pts, pocket = torch.randn(12, 3) * 2, torch.randn(60, 3) * 4
        kinds = torch.zeros(12, N_LIGAND)
        kinds[:, 0] = 1
        frag = torch.tensor([0] * 4 + [1] * 4 + [2] * 4)
        centres = torch.stack([pts[frag == f].mean(0) for f in range(3)])
        types, site = torch.randint(0, 5, (60,)), torch.zeros(3)
        q = torch.as_tensor(Rotation.random(random_state=3).as_matrix())
        tr, rot = net(pts, kinds, frag, centres, pocket, types, 1.0, site)
        tr_q, rot_q = net(pts @ q.T, kinds, frag, centres @ q.T, pocket @ q.T, types, 1.0,
                          site)
        torch.testing.assert_close(tr @ q.T, tr_q, atol=1e-8, rtol=1e-6)
        torch.testing.assert_close(rot @ q.T, rot_q, atol=1e-8, rtol=1e-6)
    finally:
        torch.set_default_dtype(torch.float32)


def _two_complexes(tmp_path):
    for name in ("7ECR_SIN", "7CNQ_G8X"):
        shutil.copytree(DOCKING / name, tmp_path / "complexes" / name)
    return tmp_path / "complexes"


def test_complexes_are_read_with_their_pocket_and_refused_clearly(tmp_path):
    found = load_all(str(_two_complexes(tmp_path)))
    assert [c.name for c in found] == ["7CNQ_G8X", "7ECR_SIN"]
    for c in found:
        lig = c.ligand.GetConformer().GetPositions()
        d = np.linalg.norm(c.pocket_pos[:, None] - lig[None], axis=2).min(1)
        assert len(c.pocket_pos) > 50 and d.max() < 8.0
    (tmp_path / "empty" / "x").mkdir(parents=True)
    with pytest.raises(DataError, match="needs a \\*_ligand.sdf"):
        load_all(str(tmp_path / "empty"))
    with pytest.raises(DataError, match="no such folder"):
        load_all(str(tmp_path / "missing"))


def test_tiny_cells_through_the_runner(tmp_path):
    pytest.importorskip("posebusters", reason="PoseBusters is in the batch extra")
    data = str(_two_complexes(tmp_path))
    pytest.importorskip("vina", reason="AutoDock Vina is in the batch extra")
    configs = [{"method": "sigmadock", "train_steps": 20, "samples": 2, "steps": 4,
                "conformers": 2, "data": data},
               {"method": "vina", "samples": 4, "exhaustiveness": 8, "data": data}]
    result = run_batch("sigmadock", configs, seeds=1, out=tmp_path / "out", workers=1)
    assert not result["failed"], result["failed"]
    for entry in result["summary"].values():
        m = {k: v["mean"] for k, v in entry["metrics"].items()}
        assert 0 <= m["top1_pb_valid"] <= 1 and 0 <= m["all_pb_valid"] <= 1
        assert 0 < m["median_rmsd"] < 30
        if entry["config"]["method"] == "vina":
            assert m["best_rmsd_lt2"] > 0, "Vina redocks at least one small ligand"
    assert len(result["summary"]) == 2
    cell = json.loads((tmp_path / "out" / "results.json").read_text())["cells"][0]
    assert any(a.endswith("rmsd.png") for a in cell["artifacts"])
    assert any(a.endswith("complexes.csv") for a in cell["artifacts"])
