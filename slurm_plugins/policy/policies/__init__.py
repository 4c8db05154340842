"""Built-in policies; importing this package registers each under its name."""

from slurm_plugins.policy.policies import capacity, fair, fifo, gang, priority

__all__ = ["capacity", "fair", "fifo", "gang", "priority"]
