"""The decoders BCI users compare against, from the libraries they use, trained on the same
source trials as SincAdaptNet and applied trial by trial without adaptation:

- CSP + LDA: MNE's common spatial patterns (log-variance of 6 components) and scikit-learn's
  linear discriminant.
- Tangent space + LR: pyriemann's shrunk (OAS) covariances projected to the tangent space at
  their Riemannian mean, then scikit-learn's logistic regression.
"""
from __future__ import annotations

import mne
import numpy as np
from mne.decoding import CSP
from pyriemann.estimation import Covariances
from pyriemann.tangentspace import TangentSpace
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline

REFERENCES = ("csp_lda", "tangent_space")


def fit(name: str, x: np.ndarray, y: np.ndarray) -> Pipeline:
    """A reference decoder `name` fitted on (trials, channels, samples) with labels `y`."""
    x = np.asarray(x, np.float64)
    if name == "csp_lda":
        components = min(6, x.shape[1])
        with mne.utils.use_log_level("error"):
            return make_pipeline(CSP(n_components=components, log=True, reg="ledoit_wolf"),
                                 LinearDiscriminantAnalysis()).fit(x, y)
    if name == "tangent_space":
        return make_pipeline(Covariances("oas"), TangentSpace(metric="riemann"),
                             LogisticRegression(max_iter=1000)).fit(x, y)
    raise ValueError(f"reference decoder must be one of {REFERENCES}, got {name!r}")


def probabilities(decoder: Pipeline, trial: np.ndarray, classes: int) -> np.ndarray:
    """(classes,) probabilities for one (channels, samples) trial; a class the decoder never
    saw in training gets 0."""
    p = decoder.predict_proba(np.asarray(trial, np.float64)[None])[0]
    out = np.zeros(classes)
    out[decoder.classes_] = p
    return out
