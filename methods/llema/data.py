"""The measured band gaps that calibrate the surrogate's gap proxy: the roost
`expt-non-metals.csv` table (composition, Eg in eV; Zhuo et al. 2018), read in its own format.
The proxy is a gradient-boosted regression on composition features; its held-out error is
part of every result."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from pymatgen.core import Composition, Element

from edgert.runtime.plugin import DataError

GAPS = "materials/expt_bandgaps/expt-non-metals.csv"  # under the shared data folder


def read_gaps(path: Path) -> tuple[list[Composition], np.ndarray]:
    """Compositions and gaps (eV) from a `composition,Eg` CSV (other columns ignored)."""
    if not path.exists():
        raise DataError(f"{path}: no such band-gap table; give a CSV with columns "
                        "composition and Eg")
    comps, gaps = [], []
    with path.open() as f:
        reader = csv.DictReader(f)
        if not {"composition", "Eg"} <= set(reader.fieldnames or ()):
            raise DataError(f"{path}: needs columns 'composition' and 'Eg', has "
                            f"{reader.fieldnames}")
        for row in reader:
            try:
                comps.append(Composition(row["composition"]))
                gaps.append(float(row["Eg"]))
            except (ValueError, KeyError) as e:
                raise DataError(f"{path}: row {reader.line_num}: {e}") from e
    return comps, np.array(gaps)


def features(comp: Composition) -> np.ndarray:
    """Fraction-weighted statistics of electronegativity, row, group and radius: (10,)."""
    fracs = comp.fractional_composition
    els = [Element(str(e)) for e in fracs]
    w = np.array([fracs[e] for e in fracs])
    cols = []
    for prop in (lambda e: e.X if e.X == e.X else 1.5, lambda e: e.row, lambda e: e.group,
                 lambda e: float(e.atomic_radius or 1.5)):
        v = np.array([prop(e) for e in els], float)
        cols += [float(w @ v), float(v.max() - v.min())]
    x = np.array([e.X if e.X == e.X else 1.5 for e in els])
    cols += [float(w[x.argmax()]), float(len(els))]
    return np.array(cols)


class GapProxy:
    """Band gap (eV) from composition, fitted on the measured table; `mae` is its error on
    a held-out fifth."""

    def __init__(self, path: Path | None = None, seed: int = 0):
        from sklearn.ensemble import GradientBoostingRegressor

        from edgert.methods.cache import recordings_folder

        comps, gaps = read_gaps(path or recordings_folder() / GAPS)
        x = np.stack([features(c) for c in comps])
        rng = np.random.default_rng(seed)
        test = rng.random(len(gaps)) < 0.2
        self.model = GradientBoostingRegressor(random_state=seed).fit(x[~test], gaps[~test])
        self.mae = float(np.abs(self.model.predict(x[test]) - gaps[test]).mean())
        self.spread = float(np.abs(gaps[test] - gaps[~test].mean()).mean())  # predict-mean
        self.model.fit(x, gaps)

    def __call__(self, comp: Composition) -> float:
        return max(0.0, float(self.model.predict(features(comp)[None])[0]))
