"""Built-in policies; importing this package registers each under its name."""

from slurm_plugins.policy.policies import (
    affinity,
    capacity,
    fair,
    fifo,
    gang,
    idle,
    placement,
    priority,
    reschedule,
)

__all__ = [
    "affinity",
    "capacity",
    "fair",
    "fifo",
    "gang",
    "idle",
    "placement",
    "priority",
    "reschedule",
]
