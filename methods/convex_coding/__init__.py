"""convex_coding: normative neural codes solved as convex programs in the representational
similarity Q = Z^T Z (linear and non-negative codes), against gradient descent on activities,
with identifiability of tunings and modular vs mixed codes as source geometry changes (a batch
job)."""
from methods.base import Method
from methods.convex_coding.job import Config, grid, run

METHOD = Method(name="convex_coding", kind="batch", run=run, grid=grid, config=Config)
