"""BTTA-DG's loaders, each on its dataset's own format: the shared real recordings, and small
bci-essentials XDF, BCI IV 2a GDF and PhysioNet EDF+ files written here."""
import numpy as np
import pytest
from edfio import Edf, EdfAnnotation, EdfSignal

from gdf_file import write_gdf
from edgert.methods.btta_dg.data import read_bci_iv_2a, read_bciess_mi, read_physionet_mi
from edgert.streams import Chunk, StreamInfo
from edgert.streams.xdf_write import XdfWriter


def test_shared_motor_imagery_runs_load_with_their_windows(shared_data):
    for path in sorted((shared_data / "eeg_mi").glob("*.xdf")):
        rec = read_bciess_mi(path)
        assert rec.rate == 256.0 and len(rec.channels) == 16 and "C3" in rec.channels
        assert rec.labels == ("class_0", "class_1", "class_2") and rec.window_s == 2.0
        x, y = rec.filtered().epochs(0.0, rec.window_s)
        assert x.shape[1:] == (16, 512) and 45 <= len(y) <= 70
        assert set(y) == {0, 1, 2}
        assert np.isfinite(x).all() and 1 < x.std() < 100, "filtered EEG in uV"


def test_bciess_loader_places_cues_on_the_eeg_clock(tmp_path):
    eeg = StreamInfo(name="amp", type="EEG", channels=("C3", "Cz", "C4"), rate=100.0)
    marks = StreamInfo(name="UnityMarkerStream", type="Markers", channels=("m",), rate=0.0,
                       dtype="string")
    path = tmp_path / "mi.xdf"
    with XdfWriter(path) as writer:
        a, b = writer.add_stream(eeg), writer.add_stream(marks)
        t = 50.0 + np.arange(1000) / 100.0
        writer.write(a, Chunk(np.random.default_rng(0).normal(size=(1000, 3)).astype(
            np.float32), t, eeg))
        values = [["Trial Started"], ["switch,3,2,2"], ["switch,3,0,2"], ["Trial Ends"]]
        writer.write(b, Chunk(np.array(values, dtype=object), np.array([51.0, 51.5, 53.5, 56.0]),
                              marks))
    rec = read_bciess_mi(path)
    assert rec.events.tolist() == [[150, 2], [350, 0]]
    x, y = rec.epochs(0.0, 2.0)
    assert x.shape == (2, 3, 200) and y.tolist() == [2, 0]


def test_bciess_loader_names_a_malformed_marker(tmp_path):
    eeg = StreamInfo(name="amp", type="EEG", channels=("C3",), rate=100.0)
    marks = StreamInfo(name="m", type="Markers", channels=("m",), rate=0.0, dtype="string")
    path = tmp_path / "bad.xdf"
    with XdfWriter(path) as writer:
        a, b = writer.add_stream(eeg), writer.add_stream(marks)
        writer.write(a, Chunk(np.zeros((100, 1), np.float32), np.arange(100) / 100.0, eeg))
        writer.write(b, Chunk(np.array([["switch,3,1"]], dtype=object), np.array([0.2]), marks))
    with pytest.raises(ValueError, match="switch,3,1"):
        read_bciess_mi(path)


BCI_IV_CHANNELS = [f"EEG-{i}" for i in range(22)] + ["EOG-left", "EOG-central", "EOG-right"]


def test_bci_iv_2a_gdf_cues_become_the_four_classes(tmp_path):
    data = np.random.default_rng(1).normal(0, 10, (3000, 25)).astype(np.float32)
    events = [(100, 768), (350, 769), (1100, 768), (1350, 772), (2100, 768), (2350, 770),
              (2500, 1023)]
    write_gdf(tmp_path / "A01T.gdf", data, 250, BCI_IV_CHANNELS, events)
    rec = read_bci_iv_2a(tmp_path / "A01T.gdf")
    assert rec.rate == 250 and len(rec.channels) == 22, "EOG dropped"
    assert rec.events.tolist() == [[350, 0], [1350, 3], [2350, 1]]
    np.testing.assert_allclose(rec.data, data[:, :22], atol=1e-3)
    x, y = rec.epochs(0.5, 3.0)
    assert x.shape == (2, 22, 625) and y.tolist() == [0, 3], "the last cue runs past the end"


def test_bci_iv_2a_evaluation_file_without_cues_says_where_labels_are(tmp_path):
    write_gdf(tmp_path / "A01E.gdf", np.zeros((500, 25), np.float32), 250, BCI_IV_CHANNELS,
              [(100, 768), (350, 783)])
    with pytest.raises(ValueError, match="783"):
        read_bci_iv_2a(tmp_path / "A01E.gdf")


def _edf(path, annotations):
    rng = np.random.default_rng(2)
    signals = [EdfSignal(rng.normal(0, 20, 160 * 30), sampling_frequency=160, label=label,
                         physical_dimension="uV", physical_range=(-500, 500))
               for label in ("C3..", "Cz..", "C4..")]
    Edf(signals, annotations=[EdfAnnotation(*a) for a in annotations]).write(path)


def test_physionet_edf_annotations_become_classes_by_run(tmp_path):
    ann = [(0.0, 4.2, "T0"), (4.2, 4.1, "T1"), (8.3, 4.2, "T0"), (12.5, 4.1, "T2")]
    _edf(tmp_path / "S001R04.edf", ann)
    rec = read_physionet_mi(tmp_path / "S001R04.edf")
    assert rec.channels == ("C3", "Cz", "C4") and rec.rate == 160
    assert rec.labels == ("left_fist", "right_fist") and rec.window_s == pytest.approx(4.1)
    assert rec.events.tolist() == [[672, 0], [2000, 1]]
    _edf(tmp_path / "S001R06.edf", ann)
    both = read_physionet_mi(tmp_path / "S001R06.edf", include_rest=True)
    assert both.labels == ("rest", "both_fists", "both_feet") and len(both.events) == 4


def test_the_cue_stream_is_chosen_by_what_it_holds_not_by_its_place(shared_data):
    """The shared runs carry two string streams: `PythonResponse` (echoes, first in some
    files) and `UnityMarkerStream` (the `switch,...` cues). The cues are found in each file,
    with or without --labels (markers with commas, exact or as patterns), and a stream named
    with --markers is the one read."""
    from edgert.methods.btta_dg.data import read_xdf_mi

    for path in sorted((shared_data / "eeg_mi").glob("*.xdf")):
        plain = read_xdf_mi(path, {})
        exact = read_xdf_mi(path, {"left": "switch,3,0,2", "right": "switch,3,1,2",
                                   "rest": "switch,3,2,2"})
        pattern = read_xdf_mi(path, {"left": r"re:switch,\d+,0,.*", "right": r"re:switch,\d+,1,.*",
                                     "rest": r"re:switch,\d+,2,.*"})
        assert exact.events.tolist() == pattern.events.tolist() == plain.events.tolist()
        assert exact.labels == ("left", "right", "rest") and 45 <= len(exact.events) <= 70
        echoes = read_xdf_mi(path, {"left": "marker received : switch,3,0,2",
                                    "right": "marker received : switch,3,1,2"},
                             markers="PythonResponse")
        assert 25 <= len(echoes.events) <= 60 and set(echoes.events[:, 1]) == {0, 1}


def test_an_unknown_marker_or_stream_lists_the_string_streams_with_counts(shared_data):
    from edgert.runtime.plugin import DataError
    from edgert.methods.btta_dg.data import read_xdf_mi

    path = shared_data / "eeg_mi" / "bciess_AG_MISwitch_run-001.xdf"
    with pytest.raises(DataError, match=r"no string stream holds markers 'cue-left'") as e:
        read_xdf_mi(path, {"left": "cue-left", "right": "cue-right"})
    assert "'UnityMarkerStream' (71 markers" in str(e.value) and "'PythonResponse' (" in str(
        e.value), "every string stream is listed with its count"
    with pytest.raises(DataError, match=r"no marker stream 'Nope'.*'UnityMarkerStream'"):
        read_xdf_mi(path, {}, markers="Nope")


def test_labels_on_the_command_line_take_commas_patterns_and_a_mapping_file(tmp_path):
    from edgert.cli.commands import _labels

    assert _labels(["left=switch,3,0,2,right=switch,3,1,2"]) == {
        "left": "switch,3,0,2", "right": "switch,3,1,2"}
    assert _labels(["left=cue-left,right=cue-right"]) == {"left": "cue-left",
                                                          "right": "cue-right"}
    assert _labels(["left=re:switch,\\d+,0,.*"]) == {"left": "re:switch,\\d+,0,.*"}
    mapping = tmp_path / "labels.yaml"
    mapping.write_text("left: switch,3,0,2\nright: 'switch,3,1,2'\n")
    assert _labels([str(mapping)]) == {"left": "switch,3,0,2", "right": "switch,3,1,2"}


def test_the_shared_recordings_are_found_from_an_installed_copy_run_in_the_checkout(
        tmp_path, monkeypatch):
    """`pip install .` puts the code in site-packages, away from `shared/data`: without
    EDGERT_DATA, the recordings are found beside the working folder or one above it."""
    from edgert.methods import cache

    data = tmp_path / "shared" / "data"
    (data / "eeg_mi").mkdir(parents=True)
    work = tmp_path / "main" / "deeper"
    work.mkdir(parents=True)
    monkeypatch.delenv("EDGERT_DATA", raising=False)
    monkeypatch.setattr(cache, "__file__", str(tmp_path / "venv" / "site-packages" / "edgert"
                                               / "methods" / "cache.py"))
    monkeypatch.chdir(work)
    assert cache.recordings_folder() == data
    monkeypatch.setenv("EDGERT_DATA", str(tmp_path / "elsewhere"))
    assert cache.recordings_folder() == tmp_path / "elsewhere"


def test_a_skipped_real_data_protocol_says_so_and_how_to_add_it(tmp_path, caplog):
    from rich.progress import Progress

    from edgert.methods.btta_dg.evaluate import Config, eeg_mi

    with Progress(disable=True) as progress:
        assert eeg_mi(Config.quick(), progress, tmp_path) is None
    assert "eeg_mi) is skipped" in caplog.text and "EDGERT_DATA" in caplog.text
    assert str(tmp_path / "eeg_mi") in caplog.text
