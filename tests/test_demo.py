"""The README's first command: the live demo runs end to end and its report holds up."""
import json
import subprocess


def test_demo_runs_and_reports_latency_and_signal_metrics(tmp_path):
    out = tmp_path / "demo.json"
    result = subprocess.run(["edgert", "demo", "--duration", "4", "--report", str(out)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == "", "a normal run prints no liblsl error, no library chatter"
    report = json.loads(out.read_text())
    m = report["metrics"]
    assert m["samples_received"] > 500
    assert m["samples_lost_after_connect"] == 0
    assert m["mains_attenuation_db"] > 20, "the notch removes 50 Hz"
    assert 0.85 < m["alpha_kept_ratio"] < 1.15, "the band-pass keeps alpha"
    assert report["end_to_end"]["count"] > 50 and report["dropped"] == 0
    assert list(report["nodes"]) == ["source", "notch", "bandpass", "sink"]


def test_unknown_demo_lists_the_available_ones():
    result = subprocess.run(["edgert", "demo", "nope"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and "available: bandpass" in result.stderr
