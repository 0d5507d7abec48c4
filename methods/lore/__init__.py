"""lore: Low-Rank Ordinal Embedding, learning a perceptual space AND its dimension from noisy
"i is closer to j than to k" triplets (a batch job)."""
from methods.base import Method
from methods.lore.job import Config, grid, run

METHOD = Method(name="lore", kind="batch", run=run, grid=grid, config=Config)
