"""CogMoE: signal-quality-guided mixture of experts over EEG, ECG, EDA and gaze.

Stage 1 (recovery.py, quality.py) synchronises and repairs each 10-s window of the four
sensors and scores their quality; stage 2 (model.py) is a cross-modal transformer whose
feed-forward blocks are three experts under a gate that sees the quality, trained with the
CORTEX loss (train.py) on simulated drives (simulate.py). The "pretrained" model is trained
here; data.py reads CL-Drive and ADABase in their own layouts.
"""
from edgert.runtime.plugin import Method, lazy

METHOD = Method(name="cogmoe", kind="stream", train=lazy("edgert.methods.cogmoe.train:train"),
                export=lazy("edgert.methods.cogmoe.export:export"),
                evaluate=lazy("edgert.methods.cogmoe.evaluate:evaluate"),
                figures=lazy("edgert.methods.cogmoe.figures:figures"), pipeline="car",
                demos={"car": lazy("edgert.methods.cogmoe.demo:car")},
                sources=lazy("edgert.methods.cogmoe.demo:sources"),
                formats=("cl_drive", "adabase"))
