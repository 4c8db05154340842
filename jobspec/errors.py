"""Errors of the job-spec layer: what a user wrote wrong, said with the field it concerns."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


class JobSpecError(Exception):
    """Base of every error raised by :mod:`jobspec`."""


class SpecError(JobSpecError, ValueError):
    """A spec (or a set of specs) is invalid; ``messages`` are ``path: message`` lines."""

    def __init__(self, messages: Iterable[str]) -> None:
        self.messages = tuple(messages)
        super().__init__("\n".join(self.messages))

    @classmethod
    def at(cls, path: str, message: str) -> SpecError:
        return cls([f"{path}: {message}" if path else message])

    def prefixed(self, prefix: str) -> SpecError:
        """The same messages under a parent path (``jobs[1].``)."""
        return SpecError(f"{prefix}{m}" for m in self.messages)


class LibraryError(JobSpecError):
    """A template or a recorded spec is missing or unreadable."""


class SubmitError(JobSpecError):
    """A submission of several specs failed part-way; what was submitted has been cancelled."""

    def __init__(self, message: str, *, submitted: Mapping[str, int] | None = None) -> None:
        super().__init__(message)
        self.submitted = dict(submitted or {})


def flatten_messages(messages: Any, path: Sequence[str | int] = ()) -> list[str]:
    """marshmallow's nested error dict as sorted ``a.b[0].c: message`` lines."""
    if isinstance(messages, Mapping):
        out: list[str] = []
        for key in sorted(messages, key=str):
            out += flatten_messages(messages[key], (*path, key))
        return out
    if isinstance(messages, list | tuple):
        if all(isinstance(m, str) for m in messages):
            where = _path(path)
            return [f"{where}: {m}" if where else m for m in messages]
        out = []
        for m in messages:
            out += flatten_messages(m, path)
        return out
    where = _path(path)
    return [f"{where}: {messages}" if where else str(messages)]


def _path(parts: Sequence[str | int]) -> str:
    text = ""
    for p in parts:
        if p == "_schema":
            continue
        if isinstance(p, int):
            text += f"[{p}]"
        else:
            text += f".{p}" if text else str(p)
    return text
