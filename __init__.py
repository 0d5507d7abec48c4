"""edgert: a real-time edge runtime for ML models fed by LSL and ZeroMQ streams.

The project's top-level folders (streams, devices, export, runtime, methods, pipelines,
benchmarks) install as subpackages of this one name, so nothing else lands in site-packages.
"""
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("edgert")
except PackageNotFoundError:
    __version__ = "0+unknown"
