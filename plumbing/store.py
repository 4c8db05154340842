"""A daemon's files: a state file written atomically, and a lock on its directory.

The state is written atomically (temp file, fsync, rename), optionally keeping the previous
version, so a daemon killed at any moment finds a whole file on restart. One lock file per
directory keeps two daemons from steering from the same state.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Generic, TypeVar

from plumbing import codec

log = logging.getLogger("aipool.store")

T = TypeVar("T")


def write_atomic(
    path: Path, text: str, *, keep_previous: bool = True, mode: int | None = None
) -> None:
    """Replace ``path`` with ``text`` all at once (a crash leaves the old or the new file);
    the old one is kept as ``<name>.prev`` unless told otherwise. ``mode``: the new file's
    permissions whatever the umask (e.g. ``0o640`` for what names tenants)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w") as f:
        if mode is not None:
            os.fchmod(f.fileno(), mode)
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    if keep_previous and path.exists():
        prev = path.with_name(path.name + ".prev")
        os.replace(path, prev)
        if mode is not None:
            os.chmod(prev, mode)  # one written before the mode was asked for
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@contextmanager
def exclusive(directory: Path, lock: str, busy: Exception) -> Iterator[None]:
    """Hold ``directory/lock`` (flock) for the block; raise ``busy`` if another process has it."""
    directory.mkdir(parents=True, exist_ok=True)
    fd: IO[str] = (directory / lock).open("a")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise busy from exc
        yield
    finally:
        fd.close()


class JsonStore(Generic[T]):
    """One frozen dataclass kept as JSON (through :mod:`codec`) in ``path``.

    ``load`` returns the saved value; with ``keep_previous`` a damaged file falls back to the
    copy kept before the last save; with nothing readable it returns ``empty()``. The state
    only saves a daemon work, so a lost file costs a repeated alert or a restarted streak,
    never a wrong action.
    """

    def __init__(
        self, path: Path, kind: type[T], *, keep_previous: bool, what: str, mode: int | None = None
    ) -> None:
        self.path = Path(path)
        self.kind = kind
        self.keep_previous = keep_previous
        self.what = what
        self.mode = mode

    def empty(self) -> T:
        return self.kind()

    def load(self) -> T:
        copies = [self.path]
        if self.keep_previous:
            copies.append(self.path.with_name(self.path.name + ".prev"))
        for p in copies:
            if not p.exists():
                continue
            try:
                return codec.load(self.kind, json.loads(p.read_text()))
            except (ValueError, OSError) as exc:
                log.error("%s %s is unreadable (%s)", self.what, p, exc)
        return self.empty()

    def save(self, value: T) -> None:
        text = json.dumps(codec.dump(value), sort_keys=True)
        write_atomic(self.path, text, keep_previous=self.keep_previous, mode=self.mode)
