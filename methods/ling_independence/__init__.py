"""ling_independence: an independence test for linear non-Gaussian data (conditional mean and
variance, both directions, permutation null) against HSIC and KCI, and inside PC (a batch job)."""
from methods.base import Method
from methods.ling_independence.job import Config, grid, run

METHOD = Method(name="ling_independence", kind="batch", run=run, grid=grid, config=Config)
