"""The `edgert` command line: the commands (commands.py), how reports look in a terminal
(console.py) and what this machine can run (doctor.py). It may use every part of edgert; the
engine (`runtime`) uses none of it."""
