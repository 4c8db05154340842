"""One exception tree for everything that can go wrong talking to Slurm.

Every error carries the argv that was run (or the REST path), the return code and Slurm's
own message, so a caller can show the user exactly what Slurm said.
"""

from __future__ import annotations

from collections.abc import Sequence


class SlurmError(Exception):
    """Base of all client errors."""

    def __init__(
        self,
        message: str,
        *,
        argv: Sequence[str] = (),
        returncode: int | None = None,
        stderr: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.argv = tuple(argv)
        self.returncode = returncode
        self.stderr = stderr

    def __str__(self) -> str:
        return self.message


class CommandError(SlurmError):
    """A Slurm command exited non-zero (or slurmrestd answered with errors)."""


class SubmitRejected(CommandError):
    """sbatch (or slurmrestd) refused a job; ``message`` is Slurm's reason for the user."""


class UnsatisfiableRequest(SubmitRejected):
    """The cluster can never run the request as written (unknown GRES, no such node config)."""


class SlurmTimeout(SlurmError):
    """A command did not finish within its timeout."""


class ControllerUnavailable(SlurmError):
    """slurmctld (or slurmdbd / slurmrestd) cannot be reached."""


class JobNotFound(SlurmError):
    """The job id is not known to the controller."""

    def __init__(
        self,
        job_id: int | str,
        *,
        argv: Sequence[str] = (),
        returncode: int | None = None,
        stderr: str = "",
    ) -> None:
        super().__init__(f"job {job_id} not found", argv=argv, returncode=returncode, stderr=stderr)
        self.job_id = job_id


class ParseError(SlurmError):
    """Slurm's output did not have the shape this client understands."""


class ReportedError(ParseError):
    """Slurm exited 0 but its JSON carries errors (22.05's squeue/sinfo do this when
    slurmctld cannot be reached): the data in it must not be trusted."""


class AuthenticationError(SlurmError):
    """slurmrestd refused the credentials (bad or expired JWT)."""


class JobRequestError(ValueError):
    """A job request that cannot be built, or sent in some wire form; ``field`` names the
    culprit. Bad input, not a Slurm failure: nothing was sent."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
