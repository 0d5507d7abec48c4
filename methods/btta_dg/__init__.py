"""BTTA-DG: gradient-free Bayesian test-time adaptation for motor-imagery EEG.

SincAdaptNet (model.py) gives a class distribution per time step; the Dirichlet projection
(dirichlet.py) and an online Gaussian mixture (gmm.py, bayes.py) adapt to a new user trial by
trial without gradients. The "pretrained" decoder is a small model trained here on synthetic
users (synth.py); data.py reads real recordings (bci-essentials XDF, BCI IV 2a GDF, PhysioNet
EDF) for training on real data.
"""
from methods.base import Method


def _train(out=None, quick: bool = False):
    from methods.btta_dg.train import train

    return train(out, quick)


def _export(out, checkpoint=None, fp16: bool = False, int8: bool = False):
    from methods.btta_dg.export import export

    return export(out, checkpoint, fp16, int8)


def _evaluate(quick: bool = False, out=None) -> dict:
    from methods.btta_dg.evaluate import evaluate

    return evaluate(quick, out)


def _demo(duration, run) -> dict:
    from methods.btta_dg.demo import bci

    return bci(duration, run)


def _sources(name: str, seconds: float):
    from methods.btta_dg.demo import sources

    return sources(name, seconds)


METHOD = Method(name="btta_dg", kind="stream", train=_train, export=_export,
                evaluate=_evaluate, pipeline="bci", demos={"bci": _demo},
                sources=_sources)
