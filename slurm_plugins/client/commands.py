"""The Slurm command-line client: the only code in AIPool that runs Slurm commands.

Reads use ``--json`` and go through :mod:`slurm_plugins.client.parse`; writes log their argv,
honour ``dry_run`` and skip changes that would not change anything.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from gres.hostlist import expand_hostlist
from slurm_plugins.client import accounts as accounts_mod
from slurm_plugins.client import parse, versions
from slurm_plugins.client.errors import (
    ControllerUnavailable,
    JobNotFound,
    ParseError,
    ReportedError,
    SlurmError,
    SubmitRejected,
)
from slurm_plugins.client.job import JobRequest
from slurm_plugins.client.models import (
    AcctJob,
    Association,
    Controller,
    Job,
    Node,
    Partition,
    Qos,
    SchedulerCounters,
)
from slurm_plugins.client.runner import Completed, Runner, SubprocessRunner
from slurm_plugins.client.specs import AccountSpec, QosSpec, UserSpec
from slurm_plugins.client.wire import classify, first_job_id, quote_value

log = logging.getLogger("aipool.slurm")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class JobUpdate:
    """Fields of one pending job to change with ``scontrol update``; ``None`` = leave alone."""

    job_id: int
    priority: int | None = None
    site_factor: int | None = None
    req_nodes: str | None = None
    exc_nodes: str | None = None
    qos: str | None = None
    #: Start as soon as it may: clear a begin time in the future (``StartTime=now``).
    start_now: bool = False

    def fields(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.qos is not None:
            out["QOS"] = self.qos
        if self.priority is not None:
            out["Priority"] = str(self.priority)
        if self.site_factor is not None:
            out["SiteFactor"] = str(self.site_factor)
        if self.req_nodes is not None:
            out["ReqNodeList"] = self.req_nodes
        if self.exc_nodes is not None:
            out["ExcNodeList"] = self.exc_nodes
        if self.start_now:  # last: the job may start the moment this is applied
            out["StartTime"] = "now"
        return out

    def minus(self, job: Job) -> JobUpdate:
        """This update without the fields that already hold the wanted value on ``job``."""
        return JobUpdate(
            self.job_id,
            priority=None if self.priority == job.priority else self.priority,
            site_factor=None if self.site_factor == job.site_factor else self.site_factor,
            req_nodes=None if self.req_nodes == job.required_nodes else self.req_nodes,
            exc_nodes=None if self.exc_nodes == job.excluded_nodes else self.exc_nodes,
            qos=None if self.qos == job.qos else self.qos,
            start_now=self.start_now,
        )


class SlurmClient:
    """Typed access to one cluster through the Slurm CLI.

    ``cluster`` adds ``-M`` to every command that supports it (multi-cluster setups).
    """

    def __init__(
        self,
        runner: Runner | None = None,
        *,
        env: Mapping[str, str] | None = None,
        dry_run: bool = False,
        timeout: float = 30.0,
        cluster: str | None = None,
    ) -> None:
        self.runner: Runner = runner or SubprocessRunner(env)
        self.dry_run = dry_run
        self.timeout = timeout
        self.cluster = cluster
        self._release: tuple[int, int] | None = None

    def on(self, cluster: str) -> SlurmClient:
        """The same client for another cluster of a multi-cluster setup (``-M cluster``)."""
        other = SlurmClient(
            self.runner, dry_run=self.dry_run, timeout=self.timeout, cluster=cluster
        )
        other._release = self._release
        return other

    # ------------------------------------------------------------------ plumbing
    def _run(
        self,
        argv: Sequence[str],
        *,
        input: str | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> Completed:
        done = self.runner(argv, input=input, timeout=timeout or self.timeout)
        if check and done.returncode != 0:
            raise classify(done)
        return done

    def _write(self, argv: Sequence[str], *, input: str | None = None) -> Completed | None:
        """Run a state-changing command, or only log it under ``dry_run``."""
        shown = shlex.join(argv) + (f" <<< {len(input.splitlines())} lines" if input else "")
        if self.dry_run:
            log.info("dry-run: %s", shown)
            return None
        log.info("run: %s", shown)
        return self._run(argv, input=input)

    def _m(self) -> list[str]:
        return ["-M", self.cluster] if self.cluster else []

    # ------------------------------------------------------------------ reads
    def _read(
        self, argv: Sequence[str], parser: Callable[[str], list[T]], *, timeout: float | None = None
    ) -> list[T]:
        """Run a read and parse it; errors inside Slurm's JSON mean it could not get the data
        (22.05 exits 0 with an empty list and an error when slurmctld is unreachable)."""
        done = self._run(argv, timeout=timeout)
        try:
            return parser(done.stdout)
        except ReportedError as exc:
            if "Invalid job id" in exc.message:
                raise JobNotFound(first_job_id(argv), argv=done.argv) from exc
            raise ControllerUnavailable(
                exc.message, argv=done.argv, returncode=done.returncode, stderr=done.stderr
            ) from exc

    def ping(self) -> bool:
        """True when a controller answers."""
        done = self._run(["scontrol", "ping"], check=False, timeout=10)
        return " is UP" in done.stdout

    def controllers(self) -> list[Controller]:
        """Every ``SlurmctldHost`` (primary first) and whether it answers ``scontrol ping``.

        Clients read the list from slurm.conf and fail over to the next one by themselves;
        this shows which one is serving. A controller that is starting may hold the answer
        back for a message timeout (24.11: while it waits on a backup that is itself starting),
        so the client's own timeout applies."""
        done = self._run(["scontrol", "ping"], check=False)
        found = parse.controllers_text(done.stdout)
        if not found:
            if done.returncode:
                raise classify(done)
            raise SlurmError(f"scontrol ping listed no controller: {done.stdout!r}", argv=done.argv)
        return found

    def version(self) -> str:
        done = self._run(["sinfo", "--version"])
        return done.stdout.split()[-1] if done.stdout.split() else ""

    def release_tuple(self) -> tuple[int, int]:
        """(major, minor) of the Slurm commands, asked once: ``(22, 5)``, ``(24, 11)``."""
        if self._release is None:
            parts = self.version().split(".")
            try:
                self._release = (int(parts[0]), int(parts[1]))
            except (IndexError, ValueError) as exc:
                raise SlurmError(f"cannot tell the Slurm version from {parts!r}") from exc
        return self._release

    def _has_scontrol_json(self) -> bool:
        # ``scontrol … --json`` exists from 23.02; 22.05's sinfo --json lists nodes instead
        return self.release_tuple() >= (23, 2)

    def counters(self) -> SchedulerCounters:
        """slurmctld's job counters (``sdiag``): cheap to ask often, unlike the queue."""
        return parse.sdiag_counters(self._run(["sdiag", *self._m()], timeout=10).stdout)

    def jobs(self, *, active_only: bool = True) -> list[Job]:
        """Jobs in the controller; finished ones still in memory are dropped unless asked."""
        every = versions.squeue_every_state(self.release_tuple())
        jobs = self._read(["squeue", *self._m(), "--all", *every, "--json"], parse.jobs)
        return [j for j in jobs if j.state.is_active] if active_only else jobs

    def job(self, job_id: int) -> Job:
        every = versions.squeue_every_state(self.release_tuple())
        argv = ["squeue", *self._m(), *every, "--json", "--jobs", str(job_id)]
        for j in self._read(argv, parse.jobs):  # unknown ids raise JobNotFound (classify)
            if j.job_id == job_id:
                return j
        raise JobNotFound(job_id, argv=argv)

    def nodes(self) -> list[Node]:
        if self._has_scontrol_json():
            return self._read(["scontrol", *self._m(), "show", "nodes", "--json"], parse.nodes)
        return self._read(["sinfo", *self._m(), "--json"], parse.nodes)

    def node_states(self) -> dict[str, str]:
        """Node -> sinfo's compact state with its power suffix (``idle~`` powered down,
        ``alloc#`` powering up, ``idle%`` powering down, ``idle!`` to be powered down), as an
        operator reads it; ``--all`` so that powered-down cloud nodes are listed too."""
        argv = ["sinfo", *self._m(), "--all", "--noheader", "--Node", "--format=%N %t"]
        done = self._run(argv)
        return dict(line.split(None, 1) for line in done.stdout.splitlines() if " " in line)

    def leaf_switches(self) -> dict[str, str]:
        """Node -> its leaf switch from ``scontrol show topology``; empty without switches."""
        done = self._run(["scontrol", *self._m(), "show", "topology"])
        return parse.leaf_switches(done.stdout, expand_hostlist)

    def partitions(self) -> list[Partition]:
        # scontrol's one-line records on every release: 22.05's sinfo --json has no
        # partitions, and 23.02+'s `show partitions --json` drops the Default flag
        done = self._run(["scontrol", *self._m(), "--oneliner", "show", "partitions"])
        return parse.partitions_text(done.stdout)

    def accounting(
        self,
        *,
        start: str = "now-1days",
        end: str = "now",
        job_ids: Iterable[int] = (),
        all_users: bool = True,
    ) -> list[AcctJob]:
        """Accounting records (``sacct``) of jobs that were eligible in [start, end]."""
        argv = ["sacct", *self._m(), "--json", "--starttime", start, "--endtime", end]
        if all_users:
            argv.append("--allusers")
        ids = ",".join(str(i) for i in job_ids)
        if ids:
            argv += ["--jobs", ids]
        return self._read(argv, parse.acct_jobs, timeout=120)

    def associations(self) -> list[Association]:
        if self._has_scontrol_json():
            return self._read(["sacctmgr", "show", "associations", "--json"], parse.associations)
        argv = [
            "sacctmgr",
            "--noheader",
            "--parsable2",
            "show",
            "associations",
            "format=" + ",".join(parse.ASSOC_FIELDS),
        ]
        return parse.associations_parsable(self._run(argv).stdout)

    def qos(self) -> list[Qos]:
        if self._has_scontrol_json():
            return self._read(["sacctmgr", "show", "qos", "--json"], parse.qos)
        argv = [
            "sacctmgr",
            "--noheader",
            "--parsable2",
            "show",
            "qos",
            "format=" + ",".join(parse.QOS_FIELDS),
        ]
        return parse.qos_parsable(self._run(argv).stdout)

    def clusters(self) -> list[str]:
        done = self._run(
            ["sacctmgr", "--noheader", "--parsable2", "show", "cluster", "format=cluster"]
        )
        return [line for line in done.stdout.splitlines() if line]

    def admin_levels(self) -> dict[str, str]:
        """Every user slurmdbd gives an admin level (``Operator`` or ``Administrator``), by
        name. Under ``PrivateData=users`` only root, SlurmUser and operators see them all."""
        argv = ["sacctmgr", "--noheader", "--parsable2", "show", "user", "format=user,adminlevel"]
        out = {}
        for line in self._run(argv).stdout.splitlines():
            name, _, level = line.partition("|")
            if name and level.strip() not in ("", "None"):
                out[name] = level.strip()
        return out

    def slurm_users(self) -> tuple[str, ...]:
        """The accounts Slurm's daemons run as (``SlurmUser``, ``SlurmdUser``), by name."""
        done = self._run(["scontrol", "show", "config"])
        names = []
        for line in done.stdout.splitlines():
            key, _, value = line.partition("=")
            if key.strip() in ("SlurmUser", "SlurmdUser"):
                names.append(value.strip().split("(", 1)[0])
        if not names:
            raise ParseError("scontrol show config names no SlurmUser", argv=done.argv)
        return tuple(names)

    # ------------------------------------------------------------------ job writes
    def submit(
        self,
        script: str,
        job: JobRequest | Sequence[str] = (),
        *,
        as_user: str | None = None,
    ) -> int:
        """Submit ``script`` (on stdin) for a :class:`JobRequest` (or raw sbatch options, for
        tests and probes that need an option no request field has); returns the job id.

        ``as_user`` (root only) submits as that Unix user through ``runuser``.
        """
        options = job.to_argv() if isinstance(job, JobRequest) else tuple(job)
        argv = ["sbatch", "--parsable", *self._m(), *options]
        if as_user is not None:
            argv = ["runuser", "-u", as_user, "--", *argv]
        done = self._write(argv, input=script)
        if done is None:
            return 0
        first = done.stdout.strip().split(";", 1)[0]
        if not first.isdigit():
            raise SubmitRejected(
                f"sbatch printed no job id: {done.stdout.strip()!r}",
                argv=done.argv,
                returncode=done.returncode,
                stderr=done.stderr,
            )
        return int(first)

    def cancel(
        self, job_ids: Iterable[int | str], *, signal: str | None = None, batch: bool = False
    ) -> None:
        """Cancel jobs, or with ``signal`` only signal them (``batch``: the batch shell too,
        which a checkpointing script needs to see the signal)."""
        ids = [str(i) for i in job_ids]
        if not ids:
            return
        argv = ["scancel", *self._m()]
        if signal:
            argv += ["--signal", signal]
        if batch:
            argv.append("--batch")
        self._write([*argv, *ids])

    def _scontrol(self, verb: str, job_ids: Iterable[int]) -> None:
        ids = ",".join(str(i) for i in job_ids)
        if ids:
            self._write(["scontrol", *self._m(), verb, ids])

    def hold(self, job_ids: Iterable[int]) -> None:
        self._scontrol("hold", job_ids)

    def release(self, job_ids: Iterable[int]) -> None:
        self._scontrol("release", job_ids)

    def requeue(self, job_ids: Iterable[int], *, hold: bool = False) -> None:
        self._scontrol("requeuehold" if hold else "requeue", job_ids)

    def update_jobs(self, updates: Iterable[JobUpdate], *, current: Mapping[int, Job] = {}) -> int:
        """Apply many job updates with one ``scontrol`` reading lines on stdin.

        Not ``-Q``: that would hide Slurm's reason when a line fails (an unknown job, a
        controller in the middle of a takeover), and the caller needs it to tell them apart.

        Fields that already have their value on the job in ``current`` are skipped, and an
        update that is left with nothing is not sent at all. Returns the lines sent.
        """
        lines = []
        for wanted in updates:
            up = wanted.minus(current[wanted.job_id]) if wanted.job_id in current else wanted
            fields = up.fields()
            if fields:
                kv = " ".join(f"{k}={quote_value(v)}" for k, v in fields.items())
                lines.append(f"update JobId={up.job_id} {kv}")
        if lines:
            self._write(["scontrol", *self._m()], input="\n".join(lines) + "\n")
        return len(lines)

    def takeover(self, index: int = 1) -> None:
        """Hand control to backup controller ``index`` now (``scontrol takeover``), e.g. before
        stopping the primary for maintenance; the old primary goes to standby."""
        if index < 1:
            raise ValueError(f"a backup controller index is 1 or more, not {index}")
        self._write(["scontrol", "takeover", str(index)])

    def reconfigure(self) -> None:
        """Make slurmctld (and every slurmd) re-read slurm.conf."""
        self._write(["scontrol", "reconfigure"])

    # ------------------------------------------------------------------ node writes
    def update_node(
        self,
        node: Node | str,
        *,
        weight: int | None = None,
        state: str | None = None,
        reason: str | None = None,
    ) -> bool:
        """Change a node's Weight and/or State; returns False when nothing needed changing."""
        name = node if isinstance(node, str) else node.name
        fields: dict[str, str] = {}
        if weight is not None and (isinstance(node, str) or node.weight != weight):
            fields["Weight"] = str(weight)
        if state is not None:
            if isinstance(node, Node) and node.has_state(state):
                pass
            else:
                fields["State"] = state
                if state.upper() in {"DRAIN", "DOWN", "FAIL"}:
                    fields["Reason"] = reason or "set by aipool"
        if not fields:
            return False
        kv = [f"{k}={quote_value(v)}" for k, v in fields.items()]
        self._write(["scontrol", *self._m(), "update", f"NodeName={name}", *kv])
        return True

    # ------------------------------------------------------------------ accounting writes
    def add_cluster(self, name: str) -> bool:
        if name in self.clusters():
            return False
        self._write(["sacctmgr", "-i", "add", "cluster", name])
        return True

    def ensure_qos(self, specs: Sequence[QosSpec]) -> list[str]:
        """Create or update QOS to match ``specs``; returns the sacctmgr commands sent."""
        return self._sacctmgr(accounts_mod.qos_commands(self.qos(), specs))

    def ensure_accounts(self, specs: Sequence[AccountSpec]) -> list[str]:
        """Create or update accounts (parents before children); returns the commands sent."""
        return self._sacctmgr(accounts_mod.account_commands(self.associations(), specs))

    def ensure_users(self, specs: Sequence[UserSpec]) -> list[str]:
        """Create or update user associations (user + account); returns the commands sent."""
        return self._sacctmgr(accounts_mod.user_commands(self.associations(), specs))

    def ensure_tenants(
        self,
        qos: Sequence[QosSpec] = (),
        accounts: Sequence[AccountSpec] = (),
        users: Sequence[UserSpec] = (),
        *,
        cluster: str | None = None,
    ) -> list[str]:
        """All three at once: one read of each kind and one sacctmgr process for the changes
        (QOS first, then accounts parents first, then users).

        ``cluster`` compares only that cluster's associations (slurmdbd serving several
        clusters lists them all); the writes go to the cluster of ``SLURM_CONF``."""
        assocs = self.associations()
        if cluster is not None:
            assocs = [a for a in assocs if a.cluster == cluster]
        return self._sacctmgr(
            accounts_mod.qos_commands(self.qos(), qos)
            + accounts_mod.account_commands(assocs, accounts)
            + accounts_mod.user_commands(assocs, users)
        )

    def ensure_admin_level(self, user: str, level: str = "Administrator") -> bool:
        """Make ``user`` a Slurm ``level`` (Operator or Administrator), adding it under the
        root account if it has no association; returns True when something changed.

        AIPool's service user needs Administrator: node weights and drains (policy daemon,
        health checker) are administrators' updates in Slurm; Operator covers only jobs."""
        if level not in ("Operator", "Administrator"):
            raise ValueError(f"a Slurm admin level is Operator or Administrator, not {level}")
        argv = ["sacctmgr", "-nP", "show", "user", f"name={user}", "format=adminlevel"]
        shown = self._run(argv).stdout.split()
        if shown and shown[0] == level:
            return False
        verb = "modify user" if shown else "add user"
        where = f"name={user} set" if shown else f"name={user} account=root"
        self._write(["sacctmgr", "-i", *verb.split(), *where.split(), f"adminlevel={level}"])
        return True

    def remove_associations(
        self, *, users: Sequence[tuple[str, str]] = (), accounts: Sequence[str] = ()
    ) -> list[str]:
        """Delete ``(user, account)`` associations, then accounts (deepest first)."""
        cmds = accounts_mod.removal_commands(self.associations(), users=users, accounts=accounts)
        return self._sacctmgr(cmds)

    def _sacctmgr(self, lines: list[str]) -> list[str]:
        """Several commands in one sacctmgr process reading them on stdin, in order.

        Every command costs ~0.5 s of round trips to slurmdbd. They are not run concurrently:
        slurmdbd then loses parents that were added a moment before.
        """
        if lines:
            self._write(["sacctmgr", "-i"], input="\n".join(lines) + "\n")
        return lines
