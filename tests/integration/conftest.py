"""Fixtures for tests against the real lab cluster.

Asked for with ``--slurm``, a lab that is down is a failure, not a skip. Every job a test
submits is cancelled when the test ends.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from aipool.lab import host
from aipool.lab.cluster import Lab
from aipool.lab.config import LabConfig
from slurm_plugins.client import JobNotFound, SlurmClient
from slurm_plugins.client.models import Job

pytestmark = pytest.mark.slurm

#: The lab's Slurm release, ``(22, 5)`` or ``(24, 11)`` (``slurmd -V``: needs no configuration).
RELEASE = host.slurm_release()


@pytest.fixture(scope="session")
def lab() -> Lab:
    lab = Lab()
    if not lab.is_up():
        pytest.fail(f"the lab cluster at {lab.cfg.root} is not up: run `aipool lab up` first")
    return lab


@pytest.fixture
def client(lab: Lab) -> Iterator[SlurmClient]:
    """A client whose submissions are cancelled at the end of the test."""
    client = SlurmClient(env=lab.cfg.env(), timeout=30)
    before = {j.job_id for j in client.jobs()}
    yield client
    leftover = sorted({j.job_id for j in client.jobs()} - before)
    if leftover:
        client.cancel(leftover)
        wait_until(lambda: not ({j.job_id for j in client.jobs()} & set(leftover)), 30)


@contextlib.contextmanager
def side_lab(
    lab: Lab,
    suffix: str,
    cluster: str,
    port_shift: int,
    *,
    inventory: Path | None = None,
    clusters: int | None = None,
    controllers: int | None = None,
    power: Path | None = None,
) -> Iterator[Lab]:
    """A lab of a test's own beside the lab under test (its root plus ``-suffix``, its ports
    shifted by ``port_shift``), brought up in that shape (``power``: with elastic nodes) and
    taken down at the end."""
    cfg = replace(
        LabConfig(),
        root=Path(f"{lab.cfg.root}-{suffix}"),
        cluster=cluster,
        ports=lab.cfg.ports.shifted(port_shift),
    )
    if inventory is not None:
        cfg = replace(cfg, inventory=inventory)
    if power is not None:
        cfg = replace(cfg, power=power)
    side = Lab(cfg)
    try:
        side.up(clusters=clusters, controllers=controllers)
        yield side
    finally:
        side.down()
        with contextlib.suppress(OSError):  # the emptied lab directory
            cfg.root.rmdir()


def wait_until(check: Callable[[], bool], timeout: float, interval: float = 0.25) -> None:
    """Poll with a deadline (never a bare sleep); fail the test with what we waited for."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout:g} s: {check}")


def wait_job(client: SlurmClient, job_id: int, pred: Callable[[Job], bool], timeout: float) -> Job:
    """Wait until the job satisfies ``pred``; returns the job as last seen."""
    seen: list[Job] = []

    def check() -> bool:
        try:
            seen[:] = [client.job(job_id)]
        except JobNotFound:  # purged from memory: keep waiting (the caller's deadline decides)
            return False
        return pred(seen[0])

    wait_until(check, timeout)
    return seen[0]
