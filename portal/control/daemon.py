"""The portal's control daemon (``aipool reconcile``): requests only read and record what should
be; this daemon makes it so, and is the one writer of what follows from it.

- inference services (:mod:`portal.inference.reconcile`): replica jobs submitted, restarted
  after a failure (with backoff), cancelled when surplus, stopped, expired or deleted;
  decrypted model copies dropped while no replica runs; deleted services removed;
- registry runs (:mod:`portal.registry.refresh`): finished fine-tuning jobs become versions,
  finished evaluations their metrics; run directories removed through the root helper;
- dataset shares (:mod:`portal.datasets.shares`): expired ones removed, which takes their
  holders off the datasets' directory ACLs (a query each pass, no Slurm);
- Slurm associations (:mod:`portal.quotas.slurmsync`): every ``slurm_every_s`` (60 s), the
  drift between the portal's memberships and Slurm's associations repaired both ways (a
  removed member's association removed, a member's missing one added) and audited; under a
  lock of its own, like the samples;
- capacity samples (:mod:`portal.nodes.sampling`): every ``SAMPLE_EVERY_S`` (60 s) one row per
  partition and kind and per node for the monitoring charts, aged minute rows rolled up into
  hourly ones and old hourly rows dropped; under a lock of its own, so a long reconcile pass
  does not delay it.

Each pass is snapshot → plan → apply under one runner lock (:mod:`portal.control.lock`): a
second daemon skips the passes the first one is doing, so no replica is submitted twice. A
full pass (every ``every_s``, 20 s) looks at every service with Slurm; between them the daemon
looks at the database every ``poll_s`` (2 s) and runs a pass over what is unsettled — a
service created, changed, started, stopped or deleted, a replica starting, a run in progress —
so a new service's first replica is submitted within about ``poll_s``. A pass that finds
nothing unsettled asks Slurm nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from flask import Flask
from sqlalchemy import select

from portal import web
from portal.clock import now as clock_now
from portal.control.book import JobBook
from portal.control.lock import held
from portal.datasets import shares as dataset_shares
from portal.errors import DomainError
from portal.extensions import db
from portal.inference import reconcile as inference
from portal.inference.models import InferenceService
from portal.nodes import sampling
from portal.quotas import slurmsync
from portal.registry import refresh
from portal.slurm import slurm
from slurm_plugins.client.errors import SlurmError

log = logging.getLogger("aipool.reconcile")

LOCK = "reconcile"
SAMPLE_LOCK = "sample"
SLURM_LOCK = "slurm-sync"


@dataclass
class PassReport:
    full: bool
    ran: bool = True  # False: another daemon held the runner lock
    services: int = 0  # services looked at
    runs: int = 0  # registry runs in progress
    lines: list[str] = field(default_factory=list)  # what was (or would be) done


@dataclass
class Daemon:
    """One pass at a time; ``tick`` never raises for Slurm or the database being away."""

    app: Flask
    every_s: float = 20.0
    poll_s: float = 2.0
    dry_run: bool = False
    loops: tuple[str, ...] = ("inference", "runs", "shares", "slurm", "samples")
    #: seconds between capacity samples; None: the app's SAMPLE_EVERY_S
    sample_every_s: float | None = None
    echo: Callable[[str], None] = log.info
    monotonic: Callable[[], float] = time.monotonic
    # each service's updated_at as the last pass left it: a change since is a reason to look
    _seen: dict[int, datetime | None] = field(default_factory=dict, init=False)
    _last_full: float = field(default=float("-inf"), init=False)
    _last_sample: float = field(default=float("-inf"), init=False)
    #: seconds between syncs of memberships and Slurm associations
    slurm_every_s: float = 60.0
    _last_slurm: float = field(default=float("-inf"), init=False)

    def run_pass(self, *, full: bool = True) -> PassReport:
        # the app context's teardown ends the pass's database session
        with self.app.app_context(), held(db.engine, LOCK) as mine:
            if not mine:
                return PassReport(full, ran=False)
            return self._pass(full)

    def _pass(self, full: bool) -> PassReport:
        session = web.session()
        now = clock_now()
        report = PassReport(full)
        if "shares" in self.loops:
            report.lines.extend(dataset_shares.expire(session, now, dry_run=self.dry_run))
        ids = self._services(now, full) if "inference" in self.loops else []
        in_progress = refresh.in_progress(session) if "runs" in self.loops else []
        report.services, report.runs = len(ids), len(in_progress)
        if not ids and not in_progress:
            return report
        port = slurm()
        book = JobBook(port)
        for service_id in ids:
            try:
                done = inference.reconcile(
                    session, port, book, service_id, now, dry_run=self.dry_run
                )
            except DomainError as exc:  # the owner gone, Slurm refusing a cancel, …
                session.rollback()
                done = [f"service {service_id}: error: {exc.message}"]
            report.lines.extend(done)
            self._seen[service_id] = session.scalar(
                select(InferenceService.updated_at).where(InferenceService.id == service_id)
            )
        if in_progress:
            report.lines.extend(refresh.refresh(session, book, dry_run=self.dry_run))
        return report

    def _services(self, now: datetime, full: bool) -> list[int]:
        """Every service on a full pass; else those unsettled or changed since last seen."""
        found = db.session.scalars(select(InferenceService).order_by(InferenceService.id)).all()
        self._seen = {s.id: self._seen[s.id] for s in found if s.id in self._seen}
        return [
            s.id
            for s in found
            if full
            or inference.unsettled(s, now)
            or s.id not in self._seen
            or self._seen[s.id] != s.updated_at
        ]

    @property
    def sample_interval(self) -> float:
        if self.sample_every_s is not None:
            return self.sample_every_s
        return float(self.app.config["SAMPLE_EVERY_S"])

    def sample_pass(self) -> list[str]:
        """One capacity sample: read every cluster, plan the rows, write them (snapshot →
        plan → apply); nothing when another daemon holds the sampler's lock."""
        with self.app.app_context(), held(db.engine, SAMPLE_LOCK) as mine:
            if not mine:
                return []
            cfg = self.app.config
            planned = sampling.plan(
                slurm().clusters(),
                clock_now(),
                step_s=round(self.sample_interval),
                keep_minutes=timedelta(hours=float(cfg["SAMPLE_KEEP_MINUTES_H"])),
                keep_hours=timedelta(days=float(cfg["SAMPLE_KEEP_HOURS_D"])),
            )
            return sampling.apply(web.session(), planned, dry_run=self.dry_run).lines

    def _sample_if_due(self) -> None:
        if "samples" not in self.loops:
            return
        if self.monotonic() - self._last_sample < self.sample_interval:
            return
        self._last_sample = self.monotonic()
        try:
            lines = self.sample_pass()
        except SlurmError as exc:
            log.error("sample skipped: Slurm did not answer: %s", exc)
            return
        except Exception:  # the database away, a bug: the next interval tries again
            log.exception("sample failed")
            return
        for line in lines[1:]:  # the rows of every minute are not news; roll-ups and drops are
            self.echo(line)

    def slurm_pass(self) -> list[str]:
        """Memberships and associations brought in line, both ways (snapshot → plan → apply,
        audited); nothing when another daemon holds the lock; a dry run only plans."""
        with self.app.app_context(), held(db.engine, SLURM_LOCK) as mine:
            if not mine:
                return []
            session = web.session()
            try:
                done = slurmsync.reconcile(session, slurm(), sync=not self.dry_run)
            except DomainError as exc:
                session.rollback()
                return [f"slurm: sync skipped: {exc.message}"]
            prefix = "would " if self.dry_run else ""
            return [f"{prefix}{line}" for line in done.lines()]

    def _slurm_if_due(self) -> None:
        if "slurm" not in self.loops or self.monotonic() - self._last_slurm < self.slurm_every_s:
            return
        self._last_slurm = self.monotonic()
        try:
            lines = self.slurm_pass()
        except SlurmError as exc:
            log.error("Slurm sync skipped: Slurm did not answer: %s", exc)
            return
        except Exception:  # the database away, a bug: the next interval tries again
            log.exception("Slurm sync failed")
            return
        for line in lines:
            self.echo(line)

    def tick(self) -> PassReport | None:
        """One scheduled pass (full when one is due), and a capacity sample and a Slurm sync
        when they are due; logs what went wrong, never raises."""
        self._sample_if_due()
        self._slurm_if_due()
        full = self.monotonic() - self._last_full >= self.every_s
        try:
            report = self.run_pass(full=full)
        except SlurmError as exc:
            log.error("pass stopped: Slurm did not answer: %s", exc)
            return None
        except Exception:  # the database away, a bug: log it, the next pass tries again
            log.exception("pass failed")
            return None
        if full and report.ran:
            self._last_full = self.monotonic()
        for line in report.lines:
            self.echo(line)
        return report

    def run_forever(self, stop: threading.Event) -> None:
        """Pass after pass until ``stop`` is set (SIGTERM, SIGINT)."""
        while not stop.is_set():
            self.tick()
            stop.wait(self.poll_s)
