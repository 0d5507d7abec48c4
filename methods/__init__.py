"""Method packages: one per paper, each plugged in through `edgert.runtime.plugin.Method`."""
