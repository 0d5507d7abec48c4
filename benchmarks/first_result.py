"""How long a newcomer waits: from typing `edgert demo NAME` to the demo's first result, on a
fresh machine (an empty model cache), for every live demo; against `edgert --help`, the
cost of starting Python and the CLI at all, measured in the same run.

    python -m edgert.benchmarks.first_result [--demos bandpass,bci,car,robot,eeg2image,nav] [--out FILE]

The goal is a first result within 60 s on 2 cores. Writes JSON with each demo's seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_S = 60.0
# long enough for a first result
DURATION_S = {"bandpass": 5, "bci": 15, "car": 15, "robot": 10, "eeg2image": 10, "nav": 15}


def launch(args: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    start = time.time()
    done = subprocess.run([sys.executable, "-m", "edgert.cli", *args],
                          capture_output=True, text=True, env=env, timeout=900)
    return start, done


def first_result(name: str, env: dict, folder: Path) -> float:
    """Seconds from launch to the demo's first result (its clients note the time)."""
    report = folder / f"{name}.json"
    start, done = launch(["demo", name, "--duration", str(DURATION_S[name]), "--report",
                          str(report)], env)
    if done.returncode != 0 or not report.exists():
        raise SystemExit(f"edgert demo {name} failed:\n{done.stdout}\n{done.stderr}")
    first = json.loads(report.read_text())["first_result_unix"]
    if first is None:
        raise SystemExit(f"edgert demo {name} produced no result in {DURATION_S[name]} s")
    return first - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demos", default=",".join(DURATION_S))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "EDGERT_CACHE": str(Path(tmp) / "cache")}
        start, _ = launch(["--help"], env)
        baseline = time.time() - start
        results = {"cli_start_s": baseline, "goal_s": GOAL_S, "demos": {}}
        print(f"edgert --help: {baseline:.2f} s (the baseline: Python and the CLI starting)")
        for name in args.demos.split(","):
            seconds = first_result(name, env, Path(tmp))
            results["demos"][name] = seconds
            print(f"edgert demo {name}: first result after {seconds:.1f} s = "
                  f"{seconds / baseline:.1f}x the CLI's start, {seconds / GOAL_S:.2f} of the "
                  f"{GOAL_S:.0f}-s goal")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))
        print(f"results written to {args.out}")


if __name__ == "__main__":
    main()
