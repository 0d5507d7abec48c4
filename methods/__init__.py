"""Method packages: one per paper, each plugged in through `methods.base.Method`."""
