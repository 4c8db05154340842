"""A throwaway PostgreSQL server for the tests that need the real thing (the portal's and
accounting's): Debian's ``postgresql`` package (``apt-get install -y postgresql``), started by
the fixture on a free port and stopped again."""

from __future__ import annotations

import glob
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        pytest.fail("PostgreSQL is not installed: apt-get install -y postgresql")
    return found[-1]


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A PostgreSQL server of our own on a free port, as the ``postgres`` system user
    (PostgreSQL refuses to run as root), with trust auth on 127.0.0.1 only."""
    root = Path(tempfile.mkdtemp(prefix="aipool-pg-"))
    shutil.chown(root, "postgres", "postgres")
    data, port = root / "data", _free_port()
    as_pg = {"user": "postgres", "group": "postgres", "extra_groups": [], "cwd": root}
    subprocess.run(
        [_bin("initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
        timeout=120,
        **as_pg,
    )
    server = subprocess.Popen(
        [
            _bin("postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-h",
            "127.0.0.1",
            "-k",
            str(root),
            "-c",
            "fsync=off",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        **as_pg,
    )
    try:
        admin = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(admin, autocommit=True) as conn:
                    conn.execute("CREATE DATABASE portal")
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/portal"
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)
