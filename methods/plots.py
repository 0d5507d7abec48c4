"""Matplotlib without a display: figures are written to files on headless machines."""
from __future__ import annotations


def pyplot():
    """`matplotlib.pyplot` on the Agg backend, imported on first use (it is slow to import)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
