"""``python -m slurm_plugins.tokens``: see :mod:`slurm_plugins.tokens.cli`."""

from slurm_plugins.tokens.cli import main

main(prog_name="aipool-tokens")
