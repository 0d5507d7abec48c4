"""The 14 design tasks of the LLEMA benchmark as constraints on predicted properties.

Bounds are the benchmark's own (its `all_tasks.csv`, energies above hull as it writes them).
Properties this repo has no surrogate for (shear modulus, dielectric constant, piezoelectric
coefficients, conductivity) stay in the definitions but are not scored: `Task.scored` lists
what is, and a task with nothing scored beyond its stability is not searched.
"""
from __future__ import annotations

from dataclasses import dataclass, field

TOXIC = frozenset({"Pb", "Cd", "Hg", "Tl", "Be", "As", "Sb", "Se", "U", "Th"})
ABUNDANT = frozenset({"H", "Li", "B", "C", "N", "O", "F", "Na", "Mg", "Al", "Si", "P", "S",
                      "Cl", "K", "Ca", "Ti", "Mn", "Fe", "Cu", "Zn", "Sn", "Ba", "Zr", "Sr"})
SURROGATES = frozenset({"band_gap", "formation_energy", "e_hull", "bulk_modulus", "density"})


@dataclass(frozen=True)
class Task:
    name: str
    bounds: dict[str, tuple[float | None, float | None]]  # property -> (min, max)
    must_contain: frozenset[str] = frozenset()
    only: frozenset[str] | None = None  # allowed elements
    exclude: frozenset[str] = frozenset()
    seeds: tuple[str, ...] = field(default=())  # known compounds the search starts from

    @property
    def scored(self) -> list[str]:
        return [p for p in self.bounds if p in SURROGATES]


TASKS = {t.name: t for t in [
    Task("hard_stiff_ceramics", {"bulk_modulus": (100, 300), "shear_modulus": (60, 200)},
         seeds=("TiC", "ZrN", "MgO")),
    Task("hard_coatings", {"bulk_modulus": (200, None), "formation_energy": (None, -1.0),
                           "band_gap": (3.0, None)}, seeds=("TiN", "AlN", "ZrO2")),
    Task("aerospace_structural", {"density": (None, 5.0), "bulk_modulus": (100, None),
                                  "shear_modulus": (40, None), "e_hull": (None, 5.0)},
         seeds=("TiC", "AlN", "MgO")),
    Task("high_k_dielectrics", {"dielectric": (10, 90), "band_gap": (2.5, 6.5)},
         seeds=("HfO2", "ZrO2", "SrTiO3")),
    Task("saw_baw_substrates", {"shear_modulus": (25, 150), "dielectric": (3.7, 95)},
         seeds=("AlN", "ZnO", "LiNbO3")),
    Task("solid_electrolytes", {"formation_energy": (None, -1.0), "e_hull": (None, 5.0),
                                "band_gap": (2.0, None)},
         must_contain=frozenset({"Li", "Na", "K", "Mg", "Ca", "Al"}),
         seeds=("LiF", "NaCl", "Li2O")),
    Task("wide_gap_semiconductors", {"band_gap": (2.5, None), "formation_energy": (None, -1.0),
                                     "e_hull": (None, 5.0)}, seeds=("GaN", "ZnO", "SiC")),
    Task("photovoltaic_absorbers", {"band_gap": (0.7, 2.0), "formation_energy": (None, 0.0)},
         only=ABUNDANT, seeds=("ZnS", "CuCl", "SnS")),
    Task("piezo_harvesters", {"piezo_dij": (8, None), "dielectric": (10, 8000)},
         seeds=("BaTiO3", "ZnO", "AlN")),
    Task("acousto_optic", {"piezo_dij": (3, 9), "dielectric": (8, 85)},
         seeds=("LiNbO3", "ZnO")),
    Task("insulating_dielectrics", {"band_gap": (2.5, None), "dielectric": (8.0, None),
                                    "e_hull": (None, 5.0)}, seeds=("MgO", "CaO", "SrTiO3")),
    Task("transparent_conductors", {"band_gap": (3.0, None), "conductivity": (50, 5000)},
         seeds=("ZnO", "SnO2", "In2O3")),
    Task("low_density_structural", {"density": (None, 3.5), "shear_modulus": (65, 195)},
         seeds=("B4C", "MgO", "AlN")),
    Task("toxic_free_perovskite_oxides", {"band_gap": (2.0, None), "bulk_modulus": (90, 135)},
         exclude=TOXIC, seeds=("SrTiO3", "BaZrO3", "CaTiO3")),
]}
