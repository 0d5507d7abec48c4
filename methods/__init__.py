"""Method packages: one per paper, each plugged in through `edgert.methods.base.Method`."""
