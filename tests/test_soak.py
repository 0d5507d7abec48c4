"""Half-hour soaks of the live method pipelines, their users' streams replayed at 8x real
time through `edgert run` (slow: `pytest -m slow tests/test_soak.py`; `EDGERT_SOAK_S` sets the
length, 1800 s by default)."""
import os

import pytest

from edgert.benchmarks.soak import soak_pipeline, unaccounted

SECONDS = float(os.environ.get("EDGERT_SOAK_S", 1800))


def test_unaccounted_names_the_node_whose_input_lost_chunks():
    report = {"edges": [{"edge": "a.out -> b.in", "chunks": 10, "queued": 1, "dropped": 2,
                         "expired": 0},
                        {"edge": "b.out -> c.in", "chunks": 5, "queued": 0, "dropped": 0,
                         "expired": 0}],
              "nodes": {"b": {"processed": 6, "quarantined": 1}, "c": {"processed": 4,
                                                                       "quarantined": 0}}}
    assert unaccounted(report) == {"b": 0, "c": 1}


@pytest.mark.slow
@pytest.mark.timeout(SECONDS + 600)
@pytest.mark.parametrize("name", ["bci", "car"])
def test_a_live_pipeline_runs_for_half_an_hour_without_growing_or_losing_count(name):
    r = soak_pipeline(name, SECONDS)
    assert "skipped" not in r, r.get("skipped")
    assert r["data_seconds"] > 4 * SECONDS  # well ahead of real time
    assert r["rss_growth"] < 0.05
    assert (r["threads_leaked"], r["sockets_leaked"], r["fds_leaked"]) == (0, 0, 0)
    assert r["unaccounted"] == {} and r["quarantined"] == {} and r["clock_faults"] == 0
    assert r["shortfalls"] == []
    outputs = {"bci": "adapt", "car": "stage2"}[name]
    assert r["processed"][outputs] > SECONDS / 2  # trials or windows kept coming to the end
