"""BTTA-DG: gradient-free Bayesian test-time adaptation for motor-imagery EEG.

SincAdaptNet (model.py) gives a class distribution per time step; the Dirichlet projection
(dirichlet.py) and an online Gaussian mixture (gmm.py, bayes.py) adapt to a new user trial by
trial without gradients. The "pretrained" decoder is a small model trained here on synthetic
users (synth.py); data.py reads real recordings (bci-essentials XDF, BCI IV 2a GDF, PhysioNet
EDF) for training on real data.
"""
from edgert.runtime.plugin import Method, lazy

METHOD = Method(name="btta_dg", kind="stream", train=lazy("edgert.methods.btta_dg.train:train"),
                export=lazy("edgert.methods.btta_dg.export:export"),
                evaluate=lazy("edgert.methods.btta_dg.evaluate:evaluate"),
                figures=lazy("edgert.methods.btta_dg.figures:figures"), pipeline="bci",
                demos={"bci": lazy("edgert.methods.btta_dg.demo:bci")},
                sources=lazy("edgert.methods.btta_dg.demo:sources"),
                formats=("xdf", "bci_iv_2a", "physionet"))
