"""Reading files that users write (job output, connection files) from the portal.

Such a file lies in a directory its user controls: it, or any directory on its way, may be
swapped for a link to a file only the portal's account may read, or it may grow without end.
So it is opened one path component at a time without following a link at any of them, read
only if it is a regular file owned by the job's user (a hard link to another's file is
another's), and only up to a size.
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

TAIL_BYTES = 64 * 1024


def uid_of(user: str) -> int | None:
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return None


def open_nofollow(path: str | Path) -> int | None:
    """A read-only fd on the absolute ``path``, reached without following any link (every
    directory on the way opened with ``O_NOFOLLOW`` relative to the one before); else None."""
    parts = Path(path).parts
    if not parts or parts[0] != "/" or ".." in parts:
        return None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open("/", flags | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        for i, name in enumerate(parts[1:], start=1):
            last = i == len(parts) - 1
            nxt = os.open(name, flags | (os.O_NONBLOCK if last else os.O_DIRECTORY), dir_fd=fd)
            os.close(fd)
            fd = nxt
    except OSError:
        os.close(fd)
        return None
    return fd


def _open(path: str | Path, owner: str) -> tuple[int, os.stat_result] | None:
    """An fd on ``path`` if it is a regular file of ``owner``'s, reached without a link."""
    uid = uid_of(owner)
    if uid is None:
        return None
    fd = open_nofollow(path)
    if fd is None:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_uid != uid:
        os.close(fd)
        return None
    return fd, st


def read_file(path: str | Path, owner: str, max_bytes: int) -> bytes | None:
    """The whole of ``path`` (at most ``max_bytes``, else None), checked as :func:`read_tail`."""
    opened = _open(path, owner)
    if opened is None:
        return None
    fd, st = opened
    try:
        if st.st_size > max_bytes:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) <= max_bytes else None


def read_tail(path: str | Path, owner: str, max_bytes: int = TAIL_BYTES) -> str | None:
    """The last ``max_bytes`` of ``path`` as text, or None when it is missing, a link, not a
    regular file, or not owned by ``owner`` (a Unix user name)."""
    opened = _open(path, owner)
    if opened is None:
        return None
    fd, st = opened
    try:
        os.lseek(fd, max(0, st.st_size - max_bytes), os.SEEK_SET)
        data = os.read(fd, max_bytes)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace")
