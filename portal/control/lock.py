"""One runner at a time for the portal's control loops (:mod:`portal.control.daemon`).

Each pass of a reconciler holds this lock from its snapshot to its last write, so two
reconcilers — two processes, or on PostgreSQL two hosts — never act on the same rows at once:
the one that does not get the lock skips the pass (the other is doing it).

- PostgreSQL: a session-level advisory lock (``pg_try_advisory_lock``) on a connection kept
  for the pass. It lasts across the pass's commits (a replica's submission commits the job's
  history before the replica row records the job), and the server drops it with the
  connection if the process dies.
- SQLite (one host, one writer): an exclusive ``flock`` on a file beside the database, which
  the kernel drops with the process. A database in memory has one process: a lock in it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Engine

_memory: dict[str, threading.Lock] = {}
_memory_guard = threading.Lock()


def key(name: str) -> int:
    """A stable signed 64-bit advisory-lock key for ``name``."""
    return int.from_bytes(hashlib.sha256(f"aipool:{name}".encode()).digest()[:8], signed=True)


@contextlib.contextmanager
def held(engine: Engine, name: str) -> Iterator[bool]:
    """True inside the block when this caller is the one runner of ``name``; False when
    another holds it (nothing waits)."""
    url = engine.url
    if url.get_backend_name() == "postgresql":
        with _postgres(engine, name) as got:
            yield got
    elif url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        with _file(Path(url.database).with_name(f"{Path(url.database).name}.{name}.lock")) as got:
            yield got
    else:
        with _process(name) as got:
            yield got


@contextlib.contextmanager
def _postgres(engine: Engine, name: str) -> Iterator[bool]:
    conn = engine.connect()
    try:
        got = bool(conn.scalar(text("SELECT pg_try_advisory_lock(:k)"), {"k": key(name)}))
        conn.commit()  # an idle connection, not one idle in a transaction
        try:
            yield got
        finally:
            if got:
                try:
                    conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key(name)})
                    conn.commit()
                except Exception:
                    # never give a connection that may still hold the lock back to the pool
                    conn.invalidate()
                    raise
    finally:
        conn.close()


@contextlib.contextmanager
def _file(path: Path) -> Iterator[bool]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _process(name: str) -> Iterator[bool]:
    with _memory_guard:
        lock = _memory.setdefault(name, threading.Lock())
    got = lock.acquire(blocking=False)
    try:
        yield got
    finally:
        if got:
            lock.release()
