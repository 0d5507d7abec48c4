"""What a newcomer hits on a fresh clone: every mistake answered on stderr, in one line that
names the stream, node, field or file and says what to do, with a non-zero exit."""
import json
import logging
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

from edgert.cli import commands as cli
from edgert.streams import Chunk, StreamInfo, local_clock
from edgert.streams.lsl import SURVEY_S, Inlet, Outlet


class Amplifier:
    """A live LSL EEG outlet in this process, pushing noise at `rate` (nothing if `silent`)."""

    def __init__(self, name: str, rate: float = 250.0, type: str = "EEG", silent: bool = False):
        self.info = StreamInfo.make(name, 4, type=type, rate=rate, source_id=name)
        self.outlet = Outlet(self.info)
        self.silent = silent
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        rng = np.random.default_rng(0)
        while self.running:
            if not self.silent:
                n = int(self.info.rate / 25)
                stamps = local_clock() - np.arange(n)[::-1] / self.info.rate
                self.outlet.push(Chunk(rng.standard_normal((n, 4)).astype(np.float32), stamps,
                                       self.info))
            time.sleep(0.04)

    def close(self) -> None:
        self.running = False
        self.thread.join(2)
        self.outlet.close()


def edgert(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["edgert", *args], capture_output=True, text=True, timeout=timeout)


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_run_names_a_missing_stream_and_fails_after_its_wait(uid):
    result = edgert("run", "bandpass", "--set", f"source.name=gone-{uid}", "--set",
                    "source.wait=2", "--duration", "5")
    err = one_line(result.stderr)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"name='gone-{uid}'" in err and "edgert streams" in err
    assert "source.wait=SECONDS" in err and "Traceback" not in err


def test_an_inlet_says_which_stream_it_took_when_several_match(uid, caplog):
    kind = f"T{uid}"
    first, second = Amplifier(f"a-{uid}", type=kind), Amplifier(f"b-{uid}", type=kind)
    inlet = Inlet(type=kind)
    try:
        with caplog.at_level(logging.WARNING, logger="edgert.streams.lsl"):
            assert inlet.open(3.0)
            time.sleep(SURVEY_S + 0.5)
    finally:
        inlet.close()
        first.close()
        second.close()
    warning = one_line(caplog.text)
    assert "2 LSL streams match" in warning and f"took '{inlet.info.name}'" in warning
    assert f"'a-{uid}'" in warning and f"'b-{uid}'" in warning


def test_a_reversed_band_is_an_error_at_load_naming_node_and_field():
    result = edgert("run", "bandpass", "--set", "bandpass.freqs=[30,8]", "--duration", "2")
    err = one_line(result.stderr)
    assert result.returncode == 2
    assert "node 'bandpass'" in err and "params.freqs" in err and "[8, 30]" in err


def test_a_band_above_nyquist_stops_the_run_naming_node_field_and_stream(uid):
    amp = Amplifier(f"nyq-{uid}", rate=250.0)
    try:
        result = edgert("run", "bandpass", "--set", f"source.name=nyq-{uid}", "--set",
                        "bandpass.freqs=[8,300]", "--duration", "20")
    finally:
        amp.close()
    err = one_line(result.stderr)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "node 'bandpass'" in err and "'freqs'" in err and "125 Hz" in err
    assert f"'nyq-{uid}'" in err and "Traceback" not in err


def test_a_run_whose_sink_received_nothing_fails(uid, tmp_path):
    amp = Amplifier(f"mute-{uid}", silent=True)
    report = tmp_path / "new" / "folder" / "report.json"
    try:
        result = edgert("run", "bandpass", "--set", f"source.name=mute-{uid}", "--duration",
                        "2", "-q", "--report", str(report))
    finally:
        amp.close()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "sink 'sink' received nothing" in one_line(result.stderr)
    assert json.loads(report.read_text())["shortfalls"], "the report keeps why it failed"
    assert str(report) in one_line(result.stdout)


def test_a_malformed_set_value_is_one_line_not_a_traceback():
    result = edgert("run", "bandpass", "--set", "bandpass.freqs=[8,30", "--duration", "1")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) <= 4
    assert "'[8,30' is not valid YAML" in one_line(result.stderr)


def test_a_run_that_cannot_start_still_writes_its_report_and_lists_the_streams(uid, tmp_path):
    report = tmp_path / "r.json"
    result = edgert("run", "bandpass", "--set", f"source.name=missing-{uid}", "--set",
                    "source.wait=1", "--report", report)
    assert result.returncode == 1
    saved = json.loads(report.read_text())
    assert saved["started"] is False and f"missing-{uid}" in saved["error"]
    assert saved["shortfalls"] == [saved["error"]]
    assert ("streams there:" in saved["error"] or "no LSL stream is on the network"
            in saved["error"])
    assert "--set source.name=NAME" in one_line(result.stderr)


def test_ctrl_c_during_start_up_says_so(uid):
    child = subprocess.Popen(["edgert", "run", "bandpass", "--set", f"source.name=late-{uid}",
                              "--set", "source.wait=60"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        seen = ""
        while "waiting up to" not in seen:
            seen += child.stderr.readline()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 130
    assert "stopped during start-up" in one_line(err)


def test_demo_help_lists_the_demos_and_an_unknown_name_answers_at_once():
    help_text = one_line(edgert("demo", "--help").stdout)
    for name in ("bandpass", "bci", "car", "eeg2image", "nav", "robot"):
        assert name in help_text
    result = edgert("demo", "nope", timeout=20)
    assert result.returncode == 2 and "available: bandpass, bci, car, eeg2image, nav, robot" in result.stderr


def test_results_are_written_before_figures_and_their_folders_made(tmp_path, capsys):
    out = tmp_path / "not" / "there" / "r.json"

    def figures(result: dict, path):
        assert json.loads(path.read_text()) == result, "the JSON is complete before any figure"
        raise RuntimeError("a figure failed")

    with pytest.raises(RuntimeError):
        cli._write_json(out, {"results": {"a": 1}}, figures)
    assert json.loads(out.read_text()) == {"results": {"a": 1}}
    assert str(out) in one_line(capsys.readouterr().out)


def test_an_output_that_cannot_be_made_fails_before_the_work(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = edgert("evaluate", "btta_dg", "--quick", "--out", str(blocker / "r.json"),
                    timeout=60)
    assert result.returncode == 2 and f"cannot write {blocker / 'r.json'}" in result.stderr


def test_record_makes_its_folder(uid, tmp_path):
    amp = Amplifier(f"rec-{uid}")
    out = tmp_path / "sessions" / "today" / "s1.xdf"
    try:
        result = edgert("record", str(out), "--stream", f"rec-{uid}", "--duration", "2")
    finally:
        amp.close()
    assert result.returncode == 0, result.stdout + result.stderr
    assert out.stat().st_size > 1000 and str(out) in one_line(result.stdout)
