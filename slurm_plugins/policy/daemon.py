"""The policy daemon: read a snapshot, plan, apply the differences; on a schedule.

Each cycle reads jobs and nodes (two calls), accounting and the association tree when
their refresh is due, utilisation samples from the node agents' files and the daemon's own
state; plans with the pure engine; and applies only what differs. ``--once`` runs one
cycle, ``--dry-run`` writes nothing (not even its state), APScheduler drives the loop with
one cycle at a time, plus an early one when a plan has a timed step due sooner.

With ``placement.watch`` the loop also looks at slurmctld's job counters (``sdiag``: one
cheap call, not the queue) several times a second and cycles as soon as jobs were submitted
or ended, so the jobs the admission hook deferred are pinned and started within a second.
While cycles succeed it touches its heartbeat file (``placement.heartbeat``): the hook
defers jobs only while that is fresh, so a daemon that stops leaves jobs to Slurm.

A restarted daemon repairs its own holds: its state says which holds it made, and the first
cycle releases any the policies no longer want.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from plumbing.errors import ConfigError
from plumbing.metrics import serve
from plumbing.notify import (
    FileSink,
    LogSink,
    MultiSink,
    Notifier,
    WebhookSink,
    email_sink,
)
from slurm_plugins.admission.heartbeat import write_stopped
from slurm_plugins.client import SlurmClient, SlurmError
from slurm_plugins.client.models import AcctJob, Association, SchedulerCounters
from slurm_plugins.client.versions import shards_across_cards
from slurm_plugins.node import SampleReader
from slurm_plugins.policy import collect
from slurm_plugins.policy.apply import ApplyResult, apply
from slurm_plugins.policy.config import DaemonConfig
from slurm_plugins.policy.engine import build_policies, plan
from slurm_plugins.policy.metrics import PolicyMetrics
from slurm_plugins.policy.plan import Plan
from slurm_plugins.policy.poolmetrics import PoolView
from slurm_plugins.policy.snapshot import DaemonState, Snapshot
from slurm_plugins.policy.state import ReasonLog, StateStore

log = logging.getLogger("aipool.policy")

ASSOC_REFRESH_S = 600.0


@dataclass
class CycleReport:
    snapshot: Snapshot
    plan: Plan
    result: ApplyResult | None
    read_s: float
    plan_s: float
    apply_s: float
    migrations: dict[int, float] = field(default_factory=dict)

    def line(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in self.plan.summary().items() if v)
        calls = self.result.calls if self.result else 0
        return (
            f"cycle: {len(self.plan.order)} pending, {counts or 'no changes'}; {calls} Slurm "
            f"writes; read {self.read_s:.2f} s, plan {self.plan_s:.2f} s, "
            f"apply {self.apply_s:.2f} s"
        )


def notifier_for(config: DaemonConfig) -> Notifier:
    sinks: list[Notifier] = []
    if config.notify_log:
        sinks.append(LogSink())
    if config.notify_file is not None:
        sinks.append(FileSink(config.notify_file))
    if config.notify_email is not None:
        try:
            sinks.append(email_sink(config.notify_email))
        except ValueError as exc:
            raise ConfigError([str(exc)]) from exc
    sinks += [WebhookSink(h, locale=config.notify_locale) for h in config.notify_webhooks]
    return MultiSink(sinks)


class Daemon:
    def __init__(
        self,
        config: DaemonConfig,
        client: SlurmClient,
        *,
        notifier: Notifier | None = None,
        clock: Callable[[], float] = time.time,
        dump_snapshot: Path | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.clock = clock
        self.dry_run = client.dry_run
        self.notifier = notifier or notifier_for(config)
        self.policies = build_policies(config.engine)
        self.store = StateStore(config.state_dir)
        self.reasons = ReasonLog(config.state_dir)
        self.state: DaemonState = self.store.load()
        self.dump_snapshot = dump_snapshot
        self.samples = (
            SampleReader(config.samples_dir, config.samples_max_age_s)
            if config.samples_dir
            else None
        )
        self._acct: list[AcctJob] = []
        self._acct_at = float("-inf")
        self._assoc: list[Association] = []
        self._assoc_at = float("-inf")
        self._leaf: dict[str, str] = {}
        self._switches_at = float("-inf")
        self._lock = threading.Lock()
        self._counters: SchedulerCounters | None = None
        self._next_cycle = float("-inf")
        self._wake: float | None = None
        self._healthy = False
        self.metrics = (
            PolicyMetrics(config.metrics.cluster, config.tenants) if config.metrics else None
        )

    # ------------------------------------------------------------------ reading
    def _accounting(self, now: float) -> list[AcctJob]:
        if now - self._acct_at >= self.config.usage_refresh_s:
            window = int(self.config.usage_window_s)
            self._acct = self.client.accounting(start=f"now-{window}", end="now")
            self._acct_at = now
        return self._acct

    def _associations(self, now: float) -> list[Association]:
        if now - self._assoc_at >= ASSOC_REFRESH_S:
            try:
                self._assoc = self.client.associations()
            except SlurmError as exc:  # the tree only refines tenants; keep the last one
                log.warning("associations unavailable: %s", exc)
            self._assoc_at = now
        return self._assoc

    def _switches(self, now: float) -> dict[str, str]:
        """Each node's leaf switch, re-read with the associations: cabling rarely changes."""
        if now - self._switches_at >= ASSOC_REFRESH_S:
            try:
                self._leaf = self.client.leaf_switches()
            except SlurmError as exc:  # placement without switches is still placement
                log.warning("switches unavailable: %s", exc)
            self._switches_at = now
        return self._leaf

    def read(self) -> Snapshot:
        now = self.clock()
        jobs = self.client.jobs()
        nodes = self.client.nodes()
        running = [j.job_id for j in jobs if j.is_running]
        if self.metrics is not None:
            self.metrics.saw(PoolView(self.metrics.cluster, nodes, jobs, now))
        return collect.build(
            jobs,
            nodes,
            now=now,
            acct=self._accounting(now),
            associations=self._associations(now),
            tenants=self.config.tenants,
            samples=self.samples.read(now, running) if self.samples else None,
            state=self.state,
            switches=self._switches(now),
            shards_across_cards=self._shards_across_cards(),
        )

    def _shards_across_cards(self) -> bool:
        """Does this Slurm take one job's shards from several cards (23.11+)?"""
        try:
            return shards_across_cards(self.client.release_tuple())
        except SlurmError:
            return False

    # ------------------------------------------------------------------ one cycle
    def cycle(self) -> CycleReport | None:
        """One read → plan → apply; None when another cycle is still running."""
        if not self._lock.acquire(blocking=False):
            log.info("previous cycle still running; skipping")
            return None
        try:
            return self._cycle()
        finally:
            self._lock.release()

    def _cycle(self) -> CycleReport:
        t0 = time.perf_counter()
        snap = self.read()
        if self.dump_snapshot is not None:
            snap.dump(self.dump_snapshot)
        t1 = time.perf_counter()
        p = plan(snap, self.config.engine, self.policies)
        t2 = time.perf_counter()
        result = apply(
            p, self.client, old_state=self.state, store=self.store, notifier=self.notifier
        )
        t3 = time.perf_counter()
        migrations = self._migrations(snap)
        if not self.dry_run:
            self.state = result.state
            self.reasons.record(p.reasons, snap.now)
        report = CycleReport(snap, p, result, t1 - t0, t2 - t1, t3 - t2, migrations)
        log.info("%s", report.line())
        if self.metrics is not None:
            self.metrics.cycled(p, result, (t1 - t0, t2 - t1, t3 - t2), migrations.values())
        return report

    def _migrations(self, snap: Snapshot) -> dict[int, float]:
        """Jobs we requeued that run again: how long that took (migration time)."""
        out = {}
        for j in snap.jobs:
            mark = self.state.requeued.get(j.job_id)
            if mark is not None and j.running and j.start is not None and j.start >= mark.since:
                out[j.job_id] = j.start - mark.since
                log.info(
                    "job %d running again on %s %.1f s after its requeue",
                    j.job_id,
                    ",".join(j.nodes),
                    j.start - mark.since,
                )
        return out

    # ------------------------------------------------------------------ forever
    def tick(self) -> float | None:
        """One scheduled cycle that never raises for Slurm trouble (a controller restarting,
        timeouts): it logs, and the next cycle tries again. Returns when to come back early
        (a timed step due before the next interval), if ever."""
        try:
            report = self.cycle()
        except SlurmError as exc:
            log.error("cycle failed: %s", exc)
            if self.metrics is not None:
                self.metrics.failed()
            self._healthy = False
            return None
        self._healthy = report is not None or self._healthy
        wake = report.plan.wake_at if report else None
        if wake is not None and wake - self.clock() < self.config.interval_s:
            return wake
        return None

    def watch(self) -> bool:
        """One look at slurmctld's job counters: cycle now if jobs were submitted or ended
        since the last look (or the interval, or a timed step, is due); then beat while
        cycles succeed. Returns whether it cycled."""
        now = self.clock()
        due = now >= self._next_cycle or (self._wake is not None and now >= self._wake)
        if self.config.watch_s > 0:
            try:
                counters = self.client.counters()
            except SlurmError as exc:
                log.warning("job counters unavailable: %s", exc)
                self._healthy = False
                return False
            due = due or counters != self._counters
            self._counters = counters
        if due:
            self._next_cycle = now + self.config.interval_s
            self._wake = self.tick()
        if self._healthy:
            self.beat()
        return due

    def beat(self) -> None:
        """Touch the heartbeat file the admission hook reads (made if missing)."""
        path = self.config.heartbeat
        if path is None or self.dry_run:
            return
        try:
            os.utime(path)
        except FileNotFoundError:
            _replace(path)
        except PermissionError:  # someone else's file in our directory: put ours instead
            _replace(path)
        except OSError as exc:
            log.warning("cannot touch the heartbeat %s: %s", path, exc)

    def run_forever(self) -> None:
        """Cycle every ``interval`` (and on new jobs, with a watch); one at a time; until
        SIGINT/SIGTERM."""
        import signal

        from apscheduler.schedulers.blocking import BlockingScheduler
        from apscheduler.triggers.interval import IntervalTrigger

        sched = BlockingScheduler(timezone="UTC")
        logging.getLogger("apscheduler").setLevel(logging.WARNING)  # a line per run is noise
        # one job does it all, so cycles never overlap: with a watch it looks at the
        # counters every watch_s and cycles when due; without one it is the interval itself
        every = self.config.watch_s or min(self.config.interval_s, 1.0)
        sched.add_job(
            self.watch,
            IntervalTrigger(seconds=every, timezone="UTC"),
            id="watch",
            max_instances=1,
            coalesce=True,
            next_run_time=_utc(time.time()),
            misfire_grace_time=None,
        )

        def stop(signum: int, frame: object) -> None:
            log.info("signal %d: stopping after the current cycle", signum)
            sched.shutdown(wait=False)

        signal.signal(signal.SIGTERM, stop)
        server = (
            serve(self.metrics.registry, self.config.metrics.address)
            if self.metrics is not None and self.config.metrics is not None
            else None
        )
        try:
            with self.store.locked():
                sched.start()
        finally:
            self.stop_beating()
            if server is not None:
                server.close()

    def stop_beating(self) -> None:
        """A daemon that stops on purpose says so in its heartbeat: the admission hook stops
        deferring jobs at once instead of after the lapse, and the portal shows since when."""
        path = self.config.heartbeat
        if path is None or self.dry_run:
            return
        try:
            write_stopped(path, self.clock())
        except OSError as exc:
            log.warning("cannot mark the heartbeat %s stopped: %s", path, exc)


def _replace(path: Path) -> None:
    try:
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_bytes(b"")
        tmp.chmod(0o644)  # empty: the admission hook (inside slurmctld, as SlurmUser) reads it
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("cannot write the heartbeat %s: %s", path, exc)


def _utc(ts: float) -> object:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC)
