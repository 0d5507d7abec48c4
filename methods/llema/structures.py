"""Crystal prototypes a candidate is built on, with pymatgen.

A candidate is a prototype and the elements on its sites, in order. The first guess of the
lattice constant comes from atomic radii; the oracle then scans the volume.
"""
from __future__ import annotations

from dataclasses import dataclass

from pymatgen.core import Composition, Element, Lattice, Structure

# prototype -> (space group, site fractions per element slot, stoichiometry, a from radii)
PROTOTYPES = {
    "rocksalt": ("Fm-3m", [[0, 0, 0], [0.5, 0.5, 0.5]], (1, 1),
                 lambda r: 2 * (r[0] + r[1])),
    "zincblende": ("F-43m", [[0, 0, 0], [0.25, 0.25, 0.25]], (1, 1),
                   lambda r: 4 * (r[0] + r[1]) / 3 ** 0.5),
    "cscl": ("Pm-3m", [[0, 0, 0], [0.5, 0.5, 0.5]], (1, 1),
             lambda r: 2 * (r[0] + r[1]) / 3 ** 0.5),
    "fluorite": ("Fm-3m", [[0, 0, 0], [0.25, 0.25, 0.25]], (1, 2),
                 lambda r: 4 * (r[0] + r[1]) / 3 ** 0.5),
    "perovskite": ("Pm-3m", [[0, 0, 0], [0.5, 0.5, 0.5], [0.5, 0.5, 0]], (1, 1, 3),
                   lambda r: 2 * (r[1] + r[2])),
}
ELEMENTAL = {"fcc": ("Fm-3m", 2 * 2 ** 0.5), "bcc": ("Im-3m", 4 / 3 ** 0.5),
             "sc": ("Pm-3m", 2.0)}  # lattice constant per atomic radius


@dataclass(frozen=True)
class Candidate:
    prototype: str
    elements: tuple[str, ...]

    @property
    def composition(self) -> Composition:
        stoich = PROTOTYPES[self.prototype][2]
        amounts: dict[str, int] = {}
        for el, n in zip(self.elements, stoich):
            amounts[el] = amounts.get(el, 0) + n
        return Composition(amounts)

    @property
    def formula(self) -> str:
        return self.composition.reduced_formula


def radius(symbol: str) -> float:
    el = Element(symbol)
    return float(el.atomic_radius or el.atomic_radius_calculated or 1.5)


def build(c: Candidate) -> Structure:
    """The primitive cell at the radii's lattice constant."""
    group, sites, _, a = PROTOTYPES[c.prototype]
    r = [radius(e) for e in c.elements]
    return Structure.from_spacegroup(group, Lattice.cubic(a(r)), list(c.elements),
                                     sites).get_primitive_structure()


def elemental(symbol: str, kind: str) -> Structure:
    group, per_radius = ELEMENTAL[kind]
    return Structure.from_spacegroup(group, Lattice.cubic(per_radius * radius(symbol)),
                                     [symbol], [[0, 0, 0]]).get_primitive_structure()


def dimer(symbol: str, box: float = 10.0) -> Structure:
    """A diatomic molecule in a box: the reference state of the gaseous elements."""
    bond = 2 * radius(symbol)
    return Structure(Lattice.cubic(box), [symbol, symbol], [[0, 0, 0], [0, 0, bond]],
                     coords_are_cartesian=True)


def fits(prototype: str, composition: Composition) -> bool:
    """Whether the prototype's stoichiometry matches the reduced composition."""
    stoich = sorted(PROTOTYPES[prototype][2])
    reduced = composition.reduced_composition
    return len(stoich) == len(reduced) and sorted(int(v) for v in reduced.values()) == stoich
