"""Keep what the docs need of an `edgert batch` run: results.json's summary (per config, mean
and standard error over seeds) as docs/results/batch/JOB.json, the job's overview figures,
and with --label FIELD[,FIELD] each config's first-seed cell figures named by those config
fields."""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

DOCS = Path(__file__).parent / "batch"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path, help="the folder `edgert batch --out` wrote")
    ap.add_argument("--label", help="config fields (comma-separated) that name each cell's "
                    "figures")
    args = ap.parse_args()
    result = json.loads((args.out / "results.json").read_text())
    job = result["job"]
    DOCS.mkdir(exist_ok=True)
    keep = {k: result[k] for k in ("job", "seeds", "engine", "summary")}
    (DOCS / f"{job}.json").write_text(json.dumps(keep, indent=1))
    for figure in args.out.glob("*.png"):
        shutil.copy(figure, DOCS / figure.name)
    if args.label:
        first = {}
        for cell in result["cells"]:
            first.setdefault(cell["config_hash"], cell)
        for cell in first.values():
            for art in cell.get("artifacts", []):
                if art.endswith(".png"):
                    label = ".".join(str(cell["config"][f]) for f in args.label.split(","))
                    name = f"{job}.{label}.{Path(art).name}"
                    shutil.copy(args.out / art, DOCS / name)


if __name__ == "__main__":
    main()
