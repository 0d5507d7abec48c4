"""The surrogate oracle: what a candidate's properties would be, without DFT.

CHGNet (its weights ship in its package) gives energies over a volume scan; the
Birch-Murnaghan fit gives the equilibrium energy, volume and bulk modulus. Formation energy
is against elemental references computed the same way (fcc, bcc or simple cubic, whichever
is lowest; a dimer in a box for the gaseous elements), and energy above hull against every
binary prototype of the candidate's element pairs, computed the same way. Band gap is the
proxy fitted on measured gaps (`data.GapProxy`); the dielectric constant a Penn-model
estimate from the valence-electron density and that gap. Validity is smact's charge balance
and electronegativity order (alloys are not valid here). All numbers are a surrogate's and are reported as such.
"""
from __future__ import annotations

import contextlib
import io
import itertools
import warnings
from dataclasses import asdict, dataclass

import numpy as np
from pymatgen.core import Composition, Structure

from edgert.methods.llema.data import GapProxy
from edgert.methods.llema.structures import ELEMENTAL, Candidate, build, dimer, elemental

GASES = frozenset({"H", "N", "O", "F", "Cl"})
SCALES = (0.9, 0.95, 1.0, 1.05, 1.1)  # lattice-constant scan


@dataclass
class Props:
    formula: str
    prototype: str
    valid: bool
    energy: float = float("nan")  # eV/atom
    formation_energy: float = float("nan")
    e_hull: float = float("nan")
    bulk_modulus: float = float("nan")  # GPa
    density: float = float("nan")  # g/cm3
    band_gap: float = float("nan")  # eV

    def as_dict(self) -> dict:
        return asdict(self)


class Oracle:
    def __init__(self, gap: GapProxy | None = None):
        from chgnet.model import CHGNet

        with contextlib.redirect_stdout(io.StringIO()):  # it announces itself on load
            self.model = CHGNet.load(verbose=False)
        self.gap = gap or GapProxy()
        self._relaxed: dict[tuple, tuple[float, float, float]] = {}
        self._refs: dict[str, float] = {}
        self.calls = 0

    def _per_atom(self, structures: list[Structure]) -> np.ndarray:
        self.calls += len(structures)
        with warnings.catch_warnings():  # CHGNet's own tensor-conversion warnings
            warnings.simplefilter("ignore", UserWarning)
            out = self.model.predict_structure(structures, task="e",
                                               batch_size=len(structures))
        return np.array([o["e"] for o in out], float)

    def relax(self, key: tuple, structure: Structure) -> tuple[float, float, float]:
        """(energy eV/atom, volume A^3/atom, bulk modulus GPa) at the scan's minimum,
        extending the scan where the minimum sits at its edge."""
        if key in self._relaxed:
            return self._relaxed[key]
        scales = list(SCALES)
        for _ in range(3):
            cells = [structure.copy() for _ in scales]
            for c, s in zip(cells, scales):
                c.scale_lattice(structure.volume * s ** 3)
            energies = self._per_atom(cells)
            best = int(energies.argmin())
            if 0 < best < len(scales) - 1:
                break
            structure = cells[best]
            scales = list(SCALES)
        volumes = np.array([c.volume for c in cells]) / len(structure)
        result = _eos(volumes, energies)
        self._relaxed[key] = result
        return result

    def reference(self, symbol: str) -> float:
        """The element's energy per atom in its lowest simple form."""
        if symbol not in self._refs:
            if symbol in GASES:
                self._refs[symbol] = self.relax(("dimer", symbol), dimer(symbol))[0]
            else:
                self._refs[symbol] = min(self.relax((k, symbol), elemental(symbol, k))[0]
                                         for k in ELEMENTAL)
        return self._refs[symbol]

    def formation(self, comp: Composition, energy: float) -> float:
        frac = comp.fractional_composition
        return energy - sum(frac[e] * self.reference(str(e)) for e in frac)

    def e_hull(self, candidate: Candidate, energy: float) -> float:
        from pymatgen.analysis.phase_diagram import PDEntry, PhaseDiagram

        comp = candidate.composition
        entries = [PDEntry(Composition(e), self.reference(e)) for e in candidate.elements]
        for a, b in itertools.combinations(sorted(set(candidate.elements)), 2):
            for proto, pair in [(p, (a, b)) for p in ("rocksalt", "zincblende", "cscl")] + \
                    [("fluorite", (a, b)), ("fluorite", (b, a))]:
                c = Candidate(proto, pair)
                e, _, _ = self.relax((proto, *pair), build(c))
                entries.append(PDEntry(c.composition, e * c.composition.num_atoms))
        entries.append(PDEntry(comp, energy * comp.num_atoms))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(PhaseDiagram(entries).get_e_above_hull(entries[-1]))

    def __call__(self, candidate: Candidate) -> Props:
        from smact.screening import smact_validity

        formula = candidate.formula
        props = Props(formula, candidate.prototype,
                      bool(smact_validity(formula, include_alloys=False)))
        if not props.valid:
            return props
        structure = build(candidate)
        energy, volume, bulk = self.relax((candidate.prototype, *candidate.elements), structure)
        structure.scale_lattice(volume * len(structure))
        comp = candidate.composition
        props.energy, props.bulk_modulus, props.band_gap = energy, bulk, self.gap(comp)
        props.formation_energy = self.formation(comp, energy)
        props.e_hull = self.e_hull(candidate, energy)
        props.density = float(structure.density)
        return props


def _eos(volumes: np.ndarray, energies: np.ndarray) -> tuple[float, float, float]:
    """Birch-Murnaghan fit of energy per atom against volume per atom."""
    from pymatgen.analysis.eos import EOS

    try:
        with warnings.catch_warnings():  # a fit that does not converge falls back below
            warnings.simplefilter("ignore", RuntimeWarning)
            fit = EOS("birch_murnaghan").fit(volumes, energies)
        if volumes.min() <= fit.v0 <= volumes.max() and fit.b0_GPa > 0:
            return float(fit.e0), float(fit.v0), float(fit.b0_GPa)
    except Exception:  # noqa: BLE001 - a failed fit falls back to the scan's minimum
        pass
    best = int(energies.argmin())
    return float(energies[best]), float(volumes[best]), float("nan")
