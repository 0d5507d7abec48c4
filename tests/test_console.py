"""How `evaluate` results read in an 80-column terminal."""
from rich.console import Console

from edgert.cli.console import gaps_table, results_table

RESULT = {
    "method": "cogmoe",
    "results": {"cogmoe": {"clean": {"f1": 0.95, "accuracy": 0.952}},
                "boosted_trees": {"clean": {"f1": 0.9571, "accuracy": 0.958}}},
    "gaps": {"boosted_trees": {"clean": {"f1": -0.0071, "ci90": [-0.0191, 0.0067]}}},
    "widening": {"boosted_trees": {"severe": {"f1": 0.0532, "ci90": [0.0261, 0.0843]}}},
}


def _text(table) -> str:
    console = Console(record=True, width=80)
    console.print(table)
    return console.export_text()


def test_results_table_keeps_whole_names_and_three_decimals():
    text = _text(results_table(RESULT))
    assert "boosted_trees" in text
    assert "0.950" in text and "95.2" in text


def test_gaps_table_shows_each_lead_with_its_interval():
    text = _text(gaps_table(RESULT))
    assert "-0.007" in text and "[-0.019, +0.007]" in text
    assert gaps_table({"method": "x", "results": {}}) is None


def test_widening_reads_in_the_same_table_under_its_own_title():
    text = _text(gaps_table(RESULT, "widening"))
    assert "clean data" in text and "+0.053" in text and "[+0.026, +0.084]" in text
    assert "-0.007" not in text
