"""``python -m slurm_plugins.policy run --once`` and friends, without the aipool CLI."""

from slurm_plugins.policy.cli import main

main()
