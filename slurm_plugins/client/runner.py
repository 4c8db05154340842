"""Running Slurm commands: argv lists with timeouts, never a shell.

A ``Runner`` is the single seam between the client and the operating system. Tests swap in a
runner that replays recorded output; the daemon's ``--replay`` mode does the same.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from slurm_plugins.client.errors import SlurmError, SlurmTimeout

log = logging.getLogger("aipool.slurm")


@dataclass(frozen=True, slots=True)
class Completed:
    """What a finished command left behind."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


class Runner(Protocol):
    """Runs one argv and returns its output; raises ``SlurmTimeout`` past ``timeout``."""

    def __call__(
        self, argv: Sequence[str], *, input: str | None = None, timeout: float
    ) -> Completed: ...


class SubprocessRunner:
    """Runs commands for real, with an optional environment overlay (e.g. ``SLURM_CONF``)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = {**os.environ, **env} if env else None

    def __call__(
        self, argv: Sequence[str], *, input: str | None = None, timeout: float
    ) -> Completed:
        args = list(argv)
        try:
            proc = subprocess.run(
                args,
                input=input,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=self._env,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise SlurmTimeout(f"{args[0]} did not finish within {timeout:g} s", argv=args) from exc
        except FileNotFoundError as exc:
            raise SlurmError(
                f"{args[0]}: command not found (is slurm-client installed and on PATH?)",
                argv=args,
            ) from exc
        return Completed(tuple(args), proc.returncode, proc.stdout, proc.stderr)


class RecordingRunner:
    """Wraps another runner and keeps every call, for tests and for counting Slurm calls."""

    def __init__(self, inner: Runner) -> None:
        self._inner = inner
        self.calls: list[tuple[tuple[str, ...], str | None]] = []

    def __call__(
        self, argv: Sequence[str], *, input: str | None = None, timeout: float
    ) -> Completed:
        self.calls.append((tuple(argv), input))
        return self._inner(argv, input=input, timeout=timeout)


class ReplayRunner:
    """Answers commands from a table of recorded outputs, matched by argv prefix.

    The longest matching prefix wins, so ``("squeue",)`` can serve every squeue call while a
    more specific entry overrides one case. Unknown commands fail loudly.
    """

    def __init__(
        self,
        answers: Mapping[
            tuple[str, ...], Completed | Callable[[Sequence[str], str | None], Completed]
        ],
    ) -> None:
        self._answers = dict(answers)
        self.calls: list[tuple[tuple[str, ...], str | None]] = []

    def __call__(
        self, argv: Sequence[str], *, input: str | None = None, timeout: float
    ) -> Completed:
        key = tuple(argv)
        self.calls.append((key, input))
        best = max((p for p in self._answers if key[: len(p)] == p), key=len, default=None)
        if best is None:
            raise AssertionError(f"no recorded answer for {key!r}")
        answer = self._answers[best]
        if callable(answer):
            return answer(argv, input)
        return Completed(key, answer.returncode, answer.stdout, answer.stderr)
