"""microstimulation: model-guided microstimulation of a topographic network's category
patches, with sites mapped onto a second, independently trained network that stands in for
the animal (a batch job)."""
from methods.base import Method
from methods.microstimulation.job import Config, grid, run

METHOD = Method(name="microstimulation", kind="batch", run=run, grid=grid, config=Config)
