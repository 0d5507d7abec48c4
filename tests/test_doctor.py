"""`edgert doctor` on this machine, and on one whose liblsl cannot be found."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pylsl


def doctor(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "edgert.runtime.cli", "doctor", *args],
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
    run = subprocess.run([sys.executable, "-m", "edgert.runtime.cli", "streams"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "liblsl cannot be loaded" in " ".join(run.stderr.split())
