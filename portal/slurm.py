"""The portal's one door to Slurm, built on :mod:`slurm_plugins.client`.

Reads (queue, nodes, associations) and account writes use the CLI client with the portal's
own rights; job submission and a user's own cancellations go through slurmrestd *as that
user*, with a short-lived JWT the token service (:mod:`slurm_plugins.tokens`) minted for them,
so Slurm sees the real owner; the portal never holds the cluster's key. Tests pass a fake through
the ``SLURM`` setting.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from flask import current_app

from portal.errors import SlurmUnavailable
from slurm_plugins.client import (
    AuthenticationError,
    ControllerUnavailable,
    JobNotFound,
    SlurmClient,
    SlurmError,
)
from slurm_plugins.client import accounts as account_diff
from slurm_plugins.client.job import JobRequest
from slurm_plugins.client.models import AcctJob, Association, Job, JobState, Node
from slurm_plugins.client.rest import RestClient
from slurm_plugins.client.specs import AccountSpec, UserSpec
from slurm_plugins.tokens import TokenClient, TokenError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ClusterRead:
    """One cluster's nodes and queue, read with ``-M <name>``; ``error`` when it did not answer."""

    name: str
    nodes: tuple[Node, ...] = ()
    jobs: tuple[Job, ...] = ()
    error: str | None = None


class SlurmPort(Protocol):
    def jobs(self) -> list[Job]: ...
    def job(self, job_id: int) -> Job | None: ...
    def jobs_by_id(self, job_ids: Sequence[int]) -> list[Job]: ...
    def nodes(self) -> list[Node]: ...
    def clusters(self) -> list[ClusterRead]: ...
    def associations(self) -> list[Association]: ...
    def preview(self, accounts: Sequence[AccountSpec], users: Sequence[UserSpec]) -> list[str]: ...
    def apply(self, accounts: Sequence[AccountSpec], users: Sequence[UserSpec]) -> list[str]: ...
    def remove(
        self, *, users: Sequence[tuple[str, str]] = (), accounts: Sequence[str] = ()
    ) -> list[str]: ...
    def submit_as(self, user: str, script: str, job: JobRequest) -> int: ...
    def cancel_as(self, user: str, job_id: int) -> None: ...
    def cancel(self, job_id: int) -> None: ...


class ClusterSlurm:
    """The real cluster: ``SlurmClient`` for reads and account writes, ``RestClient`` as users."""

    def __init__(
        self,
        client: SlurmClient,
        rest_url: str | None,
        token_socket: str | None,
        timeout: float = 30.0,
        *,
        token_lifespan: int = 120,
        cache_seconds: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.rest_url = rest_url
        self.token_socket = token_socket
        self.token_lifespan = token_lifespan
        self.timeout = timeout
        # one squeue/sinfo per interval however many pages ask; writes through the portal
        # drop the cached queue so their effect shows at once
        self.cache_seconds = cache_seconds
        self._clock = clock
        self._cache: dict[str, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def _cached(self, key: str, read: Callable[[], list[T]]) -> list[T]:
        """The shared snapshot itself, not a copy: callers only read it, and the queue's
        index (:mod:`portal.jobs.queue`) is built once per snapshot by its identity."""
        if self.cache_seconds <= 0:
            return read()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and self._clock() - hit[0] < self.cache_seconds:
                value: list[T] = hit[1]
                return value
            value = read()
            self._cache[key] = (self._clock(), value)
            return value

    def _forget_queue(self) -> None:
        with self._lock:
            self._cache.pop("jobs", None)
            self._cache.pop("clusters", None)

    def _rest(self, user: str) -> RestClient:
        if not self.rest_url or not self.token_socket:
            raise SlurmUnavailable("job submission needs SLURM_REST_URL and SLURM_TOKEN_SOCKET")
        try:
            minted = TokenClient(self.token_socket).token(user, self.token_lifespan)
        except TokenError as exc:  # callers map Slurm's errors to their translated messages
            error = ControllerUnavailable if exc.reason == "unreachable" else AuthenticationError
            raise error(f"no slurmrestd token for {user}: {exc}") from exc
        return RestClient(self.rest_url, user, token=minted.token, timeout=self.timeout)

    def jobs(self) -> list[Job]:
        return self._cached("jobs", self.client.jobs)

    def job(self, job_id: int) -> Job | None:
        try:
            return self.client.job(job_id)
        except JobNotFound:
            pass
        # gone from the controller: the accounting database still knows it
        for rec in self.client.accounting(start="now-30days", job_ids=[job_id]):
            if rec.job_id == job_id:
                return _from_accounting(rec)
        return None

    def jobs_by_id(self, job_ids: Sequence[int]) -> list[Job]:
        """Jobs of these ids: those in the queue from its shared snapshot, the others from the
        accounting database in one ``sacct`` call (a page of the job history). A rebuilt
        cluster reuses ids, so one id may come back more than once."""
        wanted = set(job_ids)
        found = [j for j in self.jobs() if j.job_id in wanted]
        rest = sorted(wanted - {j.job_id for j in found})
        if rest:
            recs = self.client.accounting(start="now-365days", job_ids=rest)
            found += [_from_accounting(r) for r in recs if r.job_id in wanted]
        return found

    def nodes(self) -> list[Node]:
        return self._cached("nodes", self.client.nodes)

    def clusters(self) -> list[ClusterRead]:
        return self._cached("clusters", self._read_clusters)

    def _read_clusters(self) -> list[ClusterRead]:
        """Every cluster slurmdbd knows, each asked by name: Slurm 22.05's JSON ignores
        ``-M all`` (see :mod:`slurm_plugins.federation.snapshot`)."""
        out = []
        for name in self.client.clusters():
            on = self.client.on(name)
            try:
                out.append(ClusterRead(name, tuple(on.nodes()), tuple(on.jobs())))
            except SlurmError as exc:
                out.append(ClusterRead(name, error=str(exc)))
        return out

    def associations(self) -> list[Association]:
        return self.client.associations()

    def preview(self, accounts: Sequence[AccountSpec], users: Sequence[UserSpec]) -> list[str]:
        have = self.client.associations()
        return account_diff.account_commands(have, accounts) + account_diff.user_commands(
            have, users
        )

    def apply(self, accounts: Sequence[AccountSpec], users: Sequence[UserSpec]) -> list[str]:
        # accounts first: user associations name them
        return self.client.ensure_accounts(accounts) + self.client.ensure_users(users)

    def remove(
        self, *, users: Sequence[tuple[str, str]] = (), accounts: Sequence[str] = ()
    ) -> list[str]:
        """Delete ``(user, account)`` associations, then accounts; only what exists."""
        return self.client.remove_associations(users=users, accounts=accounts)

    def submit_as(self, user: str, script: str, job: JobRequest) -> int:
        with self._rest(user) as rest:
            job_id = rest.submit(script, job)
        self._forget_queue()
        return job_id

    def cancel_as(self, user: str, job_id: int) -> None:
        with self._rest(user) as rest:
            rest.cancel(job_id)
        self._forget_queue()

    def cancel(self, job_id: int) -> None:
        self.client.cancel([job_id])
        self._forget_queue()


def _from_accounting(rec: AcctJob) -> Job:
    """A finished job as the accounting database remembers it, in the queue's model."""
    return Job(
        job_id=rec.job_id,
        name=rec.name,
        user=rec.user,
        account=rec.account,
        partition=rec.partition,
        qos=rec.qos,
        state=rec.state if rec.state else JobState.UNKNOWN,
        submit_time=rec.submit_time,
        start_time=rec.start_time,
        end_time=rec.end_time,
        nodes=rec.nodes,
        tres_req=rec.tres_req,
        tres_alloc=rec.tres_alloc,
        exit_code=rec.exit_code,
        comment=rec.comment,
        time_limit_min=rec.time_limit_min,
        work_dir=rec.work_dir,
        stdout_path=rec.stdout_path,
    )


def slurm() -> SlurmPort:
    """The app's Slurm port, built once from the settings."""
    port: SlurmPort | None = current_app.extensions.get("aipool.slurm")
    if port is None:
        cfg = current_app.config
        port = cfg["SLURM"] or ClusterSlurm(
            SlurmClient(env=dict(cfg["SLURM_ENV"]) or None, timeout=float(cfg["SLURM_TIMEOUT"])),
            cfg["SLURM_REST_URL"],
            cfg["SLURM_TOKEN_SOCKET"],
            timeout=float(cfg["SLURM_TIMEOUT"]),
            token_lifespan=int(cfg["SLURM_TOKEN_LIFESPAN"]),
            cache_seconds=float(cfg["SLURM_CACHE_SECONDS"]),
        )
        current_app.extensions["aipool.slurm"] = port
    return port


__all__ = ["ClusterRead", "ClusterSlurm", "SlurmError", "SlurmPort", "slurm"]
