"""`edgert run` stops cleanly on SIGINT, report written, even when started with SIGINT ignored
(as a shell without job control starts a background process: benchmarks and scripts do)."""
import json
import signal
import subprocess
import time
import uuid


def test_sigint_stops_a_run_started_with_sigint_ignored(tmp_path):
    report = tmp_path / "run.json"
    proc = subprocess.Popen(
        ["edgert", "run", "passthrough", "--quiet", "--duration", "60", "--report", str(report),
         "--set", f"source.name=nothing-{uuid.uuid4().hex[:8]}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        time.sleep(4)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 0
    finally:
        proc.kill()
    assert json.loads(report.read_text())["pipeline"] == "passthrough"
