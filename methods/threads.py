"""One thread for the numerical libraries while a block runs: small matrices and small models
gain nothing from threads, and thread pools on two busy cores spin against each other
(measured on these machines: BLAS fits 25-50x slower, torch training 10x slower beside
another busy process). Batch cells already run one per core."""
from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import threadpool_limits


@contextmanager
def one_thread() -> Iterator[None]:
    """BLAS and OpenMP pools, and torch if it is loaded, on one thread; restored after."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch else None
    if torch:
        torch.set_num_threads(1)
    try:
        with threadpool_limits(1):
            yield
    finally:
        if torch:
            torch.set_num_threads(before)
