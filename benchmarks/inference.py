"""Every exported bundle under ONNX Runtime (fp32, fp16, int8) against torch eager, one run.

Usage: python benchmarks/inference.py [--quick] [--bundles DIR ...] [--out FILE]
The inference suite of `edgert bench` (runtime/bench/inference.py) with a table per bundle;
without --bundles it exports the reference EEG decoder (ShallowConvNet-sized) first.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from runtime.bench.inference import run_inference, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs, one repeat")
    parser.add_argument("--bundles", type=Path, nargs="*")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args()
    result = run_inference(args.quick, bundles=args.bundles)
    console = Console()
    for name, bundle in result["results"].items():
        console.print(table(name, bundle))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
