"""`edgert run` stops cleanly on SIGINT, report written (its shortfalls too), exit 130, even
when started with SIGINT ignored (as a shell without job control starts a background process:
benchmarks and scripts do)."""
import json
import signal
import subprocess
import time
import uuid
from pathlib import Path


def catches_sigint(pid: int) -> bool:
    """True once the process has a SIGINT handler (Linux: SigCgt in /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    return False


def test_sigint_stops_a_run_started_with_sigint_ignored(tmp_path):
    report = tmp_path / "run.json"
    proc = subprocess.Popen(
        ["edgert", "run", "passthrough", "--quiet", "--duration", "60", "--report", str(report),
         "--set", f"source.name=nothing-{uuid.uuid4().hex[:8]}", "--set", "source.wait=0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        end = time.monotonic() + 30
        while not catches_sigint(proc.pid) and time.monotonic() < end:
            time.sleep(0.2)
        assert catches_sigint(proc.pid), "edgert run still ignores SIGINT after 30 s"
        time.sleep(3.0)  # past start-up (a SIGINT there answers "stopped during start-up")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 130, "Ctrl-C ends a run with exit 130, after its report"
    finally:
        proc.kill()
    result = json.loads(report.read_text())
    assert result["pipeline"] == "passthrough" and "received nothing" in result["shortfalls"][0]
