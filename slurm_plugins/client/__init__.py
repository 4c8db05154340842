"""The only code in AIPool that talks to Slurm: the CLI client and the slurmrestd client."""

from slurm_plugins.client.commands import JobUpdate, SlurmClient
from slurm_plugins.client.errors import (
    AuthenticationError,
    CommandError,
    ControllerUnavailable,
    JobNotFound,
    ParseError,
    SlurmError,
    SlurmTimeout,
    SubmitRejected,
    UnsatisfiableRequest,
)

__all__ = [
    "AuthenticationError",
    "CommandError",
    "ControllerUnavailable",
    "JobNotFound",
    "JobUpdate",
    "ParseError",
    "SlurmClient",
    "SlurmError",
    "SlurmTimeout",
    "SubmitRejected",
    "UnsatisfiableRequest",
]
