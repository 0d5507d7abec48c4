"""`python -m edgert.cli`: the `edgert` command."""
from edgert.cli.commands import app

app()
