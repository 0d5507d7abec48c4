"""The transport suite on real LSL outlets, ZeroMQ sockets and `edgert run` processes."""
import json

import numpy as np
import pytest

from edgert.benchmarks.transport import EXTRA_VARIANTS, VARIANTS, plan, run_seconds, run_transport
from edgert.benchmarks.transport.measure import added, lsl_units, zmq_units
from edgert.benchmarks.transport.table import table

FAST = ["raw_pylsl", "edgert", "raw_pyzmq", "edgert_zmq"]
FIGURES = {"p50_ms", "p90_ms", "p99_ms", "max_ms", "lost", "cpu_percent", "units", "samples",
           "over_time"}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One short run of the four variants that need no peer, plus both peers not set up."""
    out = tmp_path_factory.mktemp("transport")
    return run_transport(True, out_dir=out, peers_dir=out / "no-peers", seconds=1.0,
                         variants=FAST + ["timeflux", "mne_lsl"]), out


def test_results_have_every_figure_and_no_loss(report):
    result, _ = report
    assert list(result["results"]) == ["22x250/chunk1"]
    runs = result["results"]["22x250/chunk1"]
    for variant in FAST:
        r = runs[variant]
        assert FIGURES <= set(r), (variant, r.get("skipped"))
        assert r["lost"] == 0
        assert 0 < r["p50_ms"] <= r["p90_ms"] <= r["p99_ms"] <= r["max_ms"] < 1000
        assert 200 <= r["units"] <= 300  # one unit per chunk of 1 sample at 250 Hz for ~1 s
        assert len(r["samples"]) == r["units"]
        assert all(0 <= t <= 1.5 for t, _ in r["over_time"])


def test_a_middle_reports_what_it_adds_to_each_chunk_against_a_direct_receiver(report):
    runs = report[0]["results"]["22x250/chunk1"]
    for variant in ("edgert", "edgert_zmq"):
        a = runs[variant]["added"]
        assert 0 < a["p50_ms"] <= a["p99_ms"] <= a["max_ms"] < 1000, variant
        assert a["units"] >= 0.9 * runs[variant]["units"], variant
    for raw in ("raw_pylsl", "raw_pyzmq"):
        assert "added" not in runs[raw]


def test_added_pairs_units_by_what_names_them():
    """Chunk ends 1, 3 and 7 relayed; 1, 3 and 5 direct: only 1 and 3 pair, 2 and 4 ms later."""
    def units(pulls):
        return lsl_units([(t, np.array(v), None) for t, v in pulls], 10.0, 100.0, chunk=2)

    through = units([(10.012, [0.0, 1.0]), (10.034, [2.0, 3.0]), (10.08, [6.0, 7.0])])
    direct = units([(10.01, [0.0, 1.0]), (10.03, [2.0, 3.0]), (10.05, [4.0, 5.0])])
    a = added(through, direct)
    assert a["units"] == 2 and np.isclose(a["p50_ms"], 3.0) and np.isclose(a["max_ms"], 4.0)


def test_cpu_is_that_of_the_middle_process(report):
    runs = report[0]["results"]["22x250/chunk1"]
    assert runs["raw_pylsl"]["cpu_percent"] == runs["raw_pyzmq"]["cpu_percent"] == 0.0
    assert runs["edgert"]["cpu_percent"] > 0
    assert runs["edgert_zmq"]["cpu_percent"] > 0


def test_missing_peer_is_skipped_with_the_fix(report):
    runs = report[0]["results"]["22x250/chunk1"]
    for peer in ("timeflux", "mne_lsl"):
        assert set(runs[peer]) == {"skipped"}
        assert "benchmarks/setup_peers.sh" in runs[peer]["skipped"]


def test_writes_json_and_logs_and_prints_a_table(report):
    result, out = report
    assert json.loads((out / "transport.json").read_text()) == result
    assert len(list((out / "transport-logs").glob("edgert*.log"))) == 2
    assert table(result).row_count == 6


def test_failed_peer_setup_reports_its_error(tmp_path):
    (tmp_path / "mne_lsl.error").write_text("ERROR: No matching distribution found for mne-lsl")
    result = run_transport(True, peers_dir=tmp_path, variants=["mne_lsl"])
    reason = result["results"]["22x250/chunk1"]["mne_lsl"]["skipped"]
    assert "No matching distribution found for mne-lsl" in reason
    assert "benchmarks/setup_peers.sh" in reason


def test_config_and_unknown_variant():
    with pytest.raises(ValueError, match="unknown transport variants"):
        run_transport(True, variants=["raw_pylsl", "nope"])
    config = run_transport(True, peers_dir="/nonexistent", variants=["timeflux"])["config"]
    assert config["repeats"] == 1 and config["chunk_sizes"] == [1]
    assert set(VARIANTS) == {"raw_pylsl", "edgert", "timeflux", "mne_lsl", "raw_pyzmq",
                             "edgert_zmq"}
    assert not set(VARIANTS) & set(EXTRA_VARIANTS)


def test_full_runs_hold_enough_chunks_for_a_p99():
    """Chunks of 32 at 250 Hz come 8 a second: those runs last until 100 have come."""
    config = plan(False, None, None)
    assert config["repeats"] == 3 and config["extra_repeats"] == 1
    assert run_seconds(config, 250.0, 1) == config["seconds"]
    assert run_seconds(config, 250.0, 32) * 250.0 / 32 >= config["min_units"] == 100
    assert run_seconds(config, 1000.0, 32) * 1000.0 / 32 >= 100


def test_units_latency_and_loss_from_counters_and_seq():
    """Chunks of 2 at 100 Hz from t=10: sample v was due at 10 + v / 100; 4 and 5 are lost."""
    pulls = [(10.015, np.array([0.0, 1.0]), None), (10.04, np.array([2.0, 3.0]), None),
             (10.08, np.array([6.0, 7.0]), None)]
    units = lsl_units(pulls, t_start=10.0, rate=100.0, chunk=2)
    assert np.allclose(units.latency, [0.005, 0.01, 0.01]) and units.lost == 2
    rows = [(1.002, 7, 1.0), (1.013, 8, 1.01), (1.05, 11, 1.04)]
    units = zmq_units(rows)
    assert np.allclose(units.latency, [0.002, 0.003, 0.01]) and units.lost == 2


@pytest.mark.slow
def test_peers_relay_every_sample():
    """Timeflux and MNE-LSL from their venvs (bash benchmarks/setup_peers.sh first)."""
    runs = run_transport(True, variants=["timeflux", "mne_lsl"], seconds=2.0)["results"]
    for peer, r in runs["22x250/chunk1"].items():
        if "skipped" in r:
            pytest.skip(r["skipped"])
        assert r["units"] > 400 and r["p50_ms"] > 0 and r["lost"] == 0, peer
