"""`edgert doctor` on this machine, and on one whose liblsl cannot be found."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pylsl


def doctor(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "edgert.cli", "doctor", *args],
                          capture_output=True, text=True, timeout=120, env=env)


def test_doctor_reports_every_check_and_passes_here():
    result = doctor("--json")
    assert result.returncode == 0, result.stdout + result.stderr
    found = {f["area"]: f for f in json.loads(result.stdout)}
    assert found["liblsl"]["status"] == "ok" and "liblsl 1." in found["liblsl"]["detail"]
    assert "lsl_api.cfg" in found["LSL config"]["detail"]
    assert "ResolveScope=machine" in found["LSL config"]["detail"], "the shipped config's scope"
    assert "CPUExecutionProvider" in found["ONNX Runtime"]["detail"]
    assert {"CUDA / TensorRT", "device profile"} <= set(found)
    assert "shipped bundle" in found["method btta_dg"]["detail"], "a fresh cache uses it"


def test_without_liblsl_the_doctor_says_how_to_install_it_and_fails(tmp_path):
    """A copy of pylsl without its bundled library, first on the path: liblsl is really
    missing for that process, as on a Jetson with pylsl's aarch64 wheel."""
    package = Path(pylsl.__file__).parent
    shutil.copytree(package, tmp_path / "pylsl",
                    ignore=shutil.ignore_patterns("*.so", "*.dylib", "*.dll"))
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "HOME": str(tmp_path)}
    if shutil.which("ldconfig") and "liblsl" in subprocess.run(
            ["ldconfig", "-p"], capture_output=True, text=True).stdout:
        import pytest
        pytest.skip("a system-wide liblsl is installed: pylsl would find it")
    result = doctor("--json", env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    found = {f["area"]: f for f in json.loads(result.stdout)}
    assert found["liblsl"]["status"] == "fault"
    assert "conda install -c conda-forge liblsl" in found["liblsl"]["fix"]
    assert found["ONNX Runtime"]["status"] == "ok", "the other checks still run"
    assert "FAULT" in doctor(env=env).stdout
    run = subprocess.run([sys.executable, "-m", "edgert.cli", "streams"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "liblsl cannot be loaded" in " ".join(run.stderr.split())


def test_the_doctor_says_what_a_pipeline_listens_on_and_who_can_reach_it(tmp_path):
    spec = tmp_path / "open.yaml"
    spec.write_text("""name: open
nodes:
  - {name: src, node: zmq_in, params: {endpoint: "tcp://*:5599", pattern: pull}}
  - {name: out, node: lsl_outlet}
""")
    result = doctor(str(spec), "--json")
    found = {f["area"]: f for f in json.loads(result.stdout)}
    assert result.returncode == 1, "an exposed endpoint without keys cannot run"
    assert found["node src"]["status"] == "fault" and "tcp://*:5599" in found["node src"]["detail"]
    assert "every interface" in found["node out"]["detail"] and "firewall" in found["node out"]["fix"]
    local = doctor(str(spec), "--set", "src.endpoint=tcp://127.0.0.1:5599", "--json")
    found = {f["area"]: f for f in json.loads(local.stdout)}
    assert found["node src"]["status"] == "ok" and "this machine only" in found["node src"]["detail"]


def test_an_lsl_outlet_listens_where_the_doctor_says_it_does(uid):
    """liblsl ignores ListenAddress for an outlet's data server: the doctor's warning is true
    of the liblsl installed here (if liblsl learns to bind loopback, this test says so)."""
    import os

    import psutil

    from edgert.cli.doctor import lsl_ports
    from edgert.streams.lsl_config import config_file

    outlet = pylsl.StreamOutlet(pylsl.StreamInfo(f"exposed-{uid}", "EEG", 1, 100, "float32",
                                                 uid))
    lo, hi = lsl_ports(config_file())
    mine = [c for c in psutil.Process(os.getpid()).net_connections("tcp")
            if c.status == psutil.CONN_LISTEN and lo <= c.laddr.port <= hi]
    del outlet
    assert mine and all(c.laddr.ip in ("0.0.0.0", "::") for c in mine), mine
