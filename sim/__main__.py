"""``python -m sim`` runs the same commands as ``aipool sim``."""

from sim.cli import cli

cli()
