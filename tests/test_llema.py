"""The llema job: the measured gaps read in their own format, the proxy's error, the oracle
on known crystals, scoring and hypervolume, and a rule search and an LM search (through a
real local server) through the runner."""
import math

import numpy as np
import pytest

pytest.importorskip("chgnet")
pytest.importorskip("smact")

from edgert.runtime.plugin import DataError
from edgert.methods.lm.serve import serving
from edgert.methods.lm.tiny import pretrain, save, tiny_gpt2, word_tokenizer
from edgert.methods.llema.data import GapProxy, read_gaps
from edgert.methods.llema.job import hypervolume, quality, score
from edgert.methods.llema.oracle import Oracle, Props
from edgert.methods.llema.proposers import parse
from edgert.methods.llema.structures import Candidate
from edgert.methods.llema.tasks import TASKS
from edgert.runtime.batch import run_batch
from edgert.runtime.methods import find


def test_the_gap_table_is_read_in_its_own_format_and_bad_files_are_named(tmp_path):
    good = tmp_path / "gaps.csv"
    good.write_text("material_id,composition,Eg\n1,GaN,3.4\n2,Hg0.7Cd0.3Te,0.35\n")
    comps, gaps = read_gaps(good)
    assert len(comps) == 2 and comps[0].reduced_formula == "GaN"
    np.testing.assert_allclose(gaps, [3.4, 0.35])
    bad = tmp_path / "bad.csv"
    bad.write_text("formula,gap\nGaN,3.4\n")
    with pytest.raises(DataError, match="needs columns 'composition' and 'Eg'"):
        read_gaps(bad)


def test_the_gap_proxy_beats_the_mean_on_held_out_measured_gaps():
    proxy = GapProxy()
    assert proxy.mae < 0.6 * proxy.spread


def test_the_oracle_knows_rocksalt_mgo():
    oracle = Oracle()
    p = oracle(Candidate("rocksalt", ("Mg", "O")))
    assert p.valid and p.formula == "MgO"
    assert -3.6 < p.formation_energy < -2.6, "measured: -3.1 eV/atom"
    assert 130 < p.bulk_modulus < 190, "measured: about 160 GPa"
    assert p.e_hull < 0.05 and 3.2 < p.density < 3.9
    assert not oracle(Candidate("rocksalt", ("Li", "Mg"))).valid, "an alloy is not a salt"


def test_scores_and_hypervolume():
    task = TASKS["wide_gap_semiconductors"]
    ok = Props("X", "rocksalt", True, formation_energy=-1.5, e_hull=0.0, band_gap=3.0)
    assert score(task, ok) == (1.0, 1.0)
    low = Props("X", "rocksalt", True, formation_energy=-1.5, e_hull=0.1, band_gap=1.25)
    sat, stab = score(task, low)
    assert sat == pytest.approx(1 / 1.5) and stab == pytest.approx(math.exp(-1))
    assert quality(task, low) < quality(task, ok) < quality(
        task, Props("X", "rocksalt", True, formation_energy=-2.0, e_hull=0.0, band_gap=5.0))
    assert hypervolume([(1.0, 0.5), (0.5, 1.0)]) == pytest.approx(0.75)
    assert parse("Compound: BaTiO3 because").prototype == "perovskite"
    assert parse("no formula here") is None


def test_a_rule_search_and_an_lm_search_through_the_runner(tmp_path):
    lines = [f"Compound: {f}" for f in ("AlN", "BN", "MgO", "ZnS")] * 4
    tok = word_tokenizer(lines)
    lm = tiny_gpt2(tok)
    pretrain(lm, tok, lines, steps=60, batch=8)
    with serving(save(lm, tok, tmp_path / "tiny")) as url:
        configs = [{"search": "llema", "generations": 1, "per_round": 3},
                   {"search": "lm", "generations": 1, "per_round": 2, "lm": url}]
        result = run_batch("llema", configs, seeds=1, out=tmp_path / "run", workers=1)
    assert not result["failed"], result["failed"]
    by = {e["config"]["search"]: {k: v["mean"] for k, v in e["metrics"].items()}
          for e in result["summary"].values()}
    assert by["llema"]["evaluated"] == 3 and 0 <= by["llema"]["hit_rate"] <= 1
    assert by["lm"]["evaluated"] >= 1, "the LM's formulas became candidates"
    assert find("llema").figures(result, tmp_path) == [tmp_path / "llema.searches.png"]
