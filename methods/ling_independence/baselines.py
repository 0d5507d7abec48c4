"""The independence tests people use, as the libraries ship them: hyppo's HSIC and
causal-learn's KCI."""
from __future__ import annotations

import numpy as np
from causallearn.utils.KCI.KCI import KCI_UInd
from hyppo.independence import Hsic


def hsic_pvalue(x: np.ndarray, y: np.ndarray, permutations: int) -> float:
    """HSIC with Gaussian kernels; a permutation null like LiNG's (hyppo's chi-square shortcut
    is off), so both tests face the same Monte-Carlo error. hyppo draws its permutations from
    numpy's global generator."""
    return float(Hsic().test(x[:, None], y[:, None], reps=permutations, auto=False).pvalue)


def kci_pvalue(x: np.ndarray, y: np.ndarray) -> float:
    """KCI with its defaults: Gaussian kernels, gamma approximation of the null."""
    return float(KCI_UInd().compute_pvalue(x[:, None], y[:, None])[0])
