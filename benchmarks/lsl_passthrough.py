"""The transport suite from the command line: LSL and ZeroMQ hops through edgert and its peers.

The suite itself is runtime.bench.transport (also run by `edgert bench transport`); this prints
its table and writes its JSON. Peers (Timeflux, MNE-LSL) need `bash benchmarks/setup_peers.sh`.

Usage: python benchmarks/lsl_passthrough.py [--quick] [--seconds S] [--variants a,b] [--out DIR]
"""
from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from runtime.bench.transport import EXTRA_VARIANTS, VARIANTS, run_transport
from runtime.bench.transport.table import table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="one repeat of 2 s, 22 ch x 250 Hz in chunks of 1, six variants")
    parser.add_argument("--seconds", type=float, default=None, help="measured seconds per run")
    parser.add_argument("--variants", default=None,
                        help=f"comma-separated subset of {', '.join(VARIANTS + EXTRA_VARIANTS)}")
    parser.add_argument("--out", type=Path, default=None,
                        help="write DIR/transport.json and the middle processes' logs here")
    args = parser.parse_args()
    console = Console()
    with Progress(console=console, transient=True) as progress:
        report = run_transport(args.quick, out_dir=args.out, progress=progress,
                               variants=args.variants.split(",") if args.variants else None,
                               seconds=args.seconds)
    console.print(table(report))
    if args.out:
        console.print(f"written {args.out / 'transport.json'}")


if __name__ == "__main__":
    main()
