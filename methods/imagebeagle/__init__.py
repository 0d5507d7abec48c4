"""imagebeagle: finding preferred AND anti-preferred stimuli of a unit with few queries, by
walking a k-nearest-neighbour graph of real photo patches (a batch job)."""
from methods.base import Method
from methods.imagebeagle.job import Config, grid, run

METHOD = Method(name="imagebeagle", kind="batch", run=run, grid=grid, config=Config)
