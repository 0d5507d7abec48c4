"""AVDE: autoregressive visual decoding from EEG.

A LaBraM-style encoder (model.py), pretrained here by masked EEG modelling against a neural
tokenizer, is aligned to an image-embedding space (stage 1); next-scale prediction over a
multi-scale VQ-VAE (vqvae.py, var.py) draws the image coarse to fine from the EEG's embedding
(stage 2). No CLIP or LaBraM weights can be downloaded here: every "pretrained" part is a
small model trained by this package (train.py) on the shared real EEG, simulated viewers
(simulate.py) and procedural images (images.py); data.py reads THINGS-EEG2 in its own layout.
"""
from edgert.runtime.plugin import Method, lazy

METHOD = Method(name="avde", kind="stream", train=lazy("edgert.methods.avde.train:train"),
                export=lazy("edgert.methods.avde.export:export"),
                evaluate=lazy("edgert.methods.avde.evaluate:evaluate"),
                figures=lazy("edgert.methods.avde.figures:figures"), pipeline="eeg2image",
                demos={"eeg2image": lazy("edgert.methods.avde.demo:eeg2image")},
                sources=lazy("edgert.methods.avde.demo:sources"),
                formats=("things_eeg2",))
