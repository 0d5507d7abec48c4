"""The batch runner: a real job's grid on a process pool and on Ray (local, 2 CPUs), results
with mean and standard error, resuming, and a failing cell that loses nothing else."""
import json
import subprocess
import sys

from edgert.runtime.batch import run_batch

JOB = "batch_jobs:PI"


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-c", "from edgert.cli.commands import app; app()", "batch",
                           *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_local_grid_summarises_over_seeds_and_resumes(tmp_path):
    configs = [{"samples": 500, "fail": False}, {"samples": 5000, "fail": False}]
    result = run_batch(JOB, configs, seeds=3, out=tmp_path, workers=2)
    assert result["ran"] == 6 and not result["failed"]
    summary = json.loads((tmp_path / "results.json").read_text())["summary"]
    assert len(summary) == 2
    errors = sorted(summary.values(), key=lambda e: e["config"]["samples"])
    small, large = (e["metrics"]["abs_error"] for e in errors)
    assert small["n"] == large["n"] == 3 and small["se"] > 0
    assert all(3.0 < e["metrics"]["estimate"]["mean"] < 3.3 for e in errors)
    md = (tmp_path / "summary.md").read_text()
    assert "± se" in md and "points.png" in md
    again = run_batch(JOB, configs, seeds=3, out=tmp_path, workers=2)
    assert again["ran"] == 0 and again["skipped_as_done"] == 6
    assert again["summary"] == result["summary"]


def test_a_failing_cell_is_reported_and_the_others_kept(tmp_path):
    configs = [{"samples": 300, "fail": False}, {"samples": 300, "fail": True}]
    result = run_batch(JOB, configs, seeds=2, out=tmp_path, workers=2)
    assert len(result["failed"]) == 2 and len(result["cells"]) == 2
    assert "ValueError: asked to fail" in result["failed"][0]["error"]
    assert "## failed cells" in (tmp_path / "summary.md").read_text()
    rerun = run_batch(JOB, configs, seeds=2, out=tmp_path, workers=2)
    assert rerun["skipped_as_done"] == 2 and rerun["ran"] == 2, "failed cells run again"


def test_a_cell_refused_for_its_data_says_why_in_one_line(tmp_path):
    missing = str(tmp_path / "nope.csv")
    result = run_batch(JOB, [{"samples": 100, "data": missing}], seeds=1, out=tmp_path,
                       workers=1)
    [failed] = result["failed"]
    assert failed["error"] == f"{missing}: no such file (give data: PATH to a file that exists)"


def test_cli_validates_the_config_file_and_exits_1_on_failure(tmp_path, request):
    tests = request.path.parent
    bad = tmp_path / "bad.yaml"
    bad.write_text("samples: lots\n")
    done = _cli(JOB, "--config", str(bad), "--out", str(tmp_path / "o1"), cwd=tests)
    assert done.returncode == 2 and "config 0" in done.stderr and "samples" in done.stderr
    good = tmp_path / "grid.yaml"
    good.write_text("configs:\n  - {samples: 100}\n  - {samples: 100, fail: true}\n")
    done = _cli(JOB, "--config", str(good), "--seeds", "2", "--out", str(tmp_path / "o2"),
                cwd=tests)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "failed" in done.stdout and "mean ± se" in done.stdout


def test_ray_engine_in_local_mode_on_two_cpus(tmp_path):
    result = run_batch(JOB, [{"samples": 400, "fail": False}], seeds=4, out=tmp_path,
                       engine="ray", workers=2)
    assert result["ran"] == 4 and not result["failed"]
    assert result["summary"][next(iter(result["summary"]))]["metrics"]["estimate"]["n"] == 4
