"""``aipool lab up | down | status | env``: a real Slurm cluster on this one host.

munge, MariaDB (own datadir under the lab root), slurmdbd, slurmctld, one ``slurmd -N`` per
inventory node and slurmrestd (JWT, loopback only). What ``up`` starts is written to a ledger
so ``down`` stops only that, by PID, and then wipes the lab's state.
"""

from __future__ import annotations

import json
import logging
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from aipool.lab import daemons, host, metrics, power, preflight
from aipool.lab.config import MAX_CLUSTERS, LabConfig
from aipool.lab.daemons import LabError
from aipool.lab.nsexec import nsexec_argv
from aipool.lab.render import render_lab
from aipool.lab.tenants import Tenants, load_tenants
from gres.inventory import Inventory, load_inventory
from slurm_plugins.admission import HOOK_FILE, TABLE_FILE
from slurm_plugins.admission.render import replace_atomically
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.errors import SlurmError
from slurm_plugins.client.versions import rest_plugins

# daemon name -> the word its /proc cmdline must contain (guards against reused PIDs)
_EXPECT = {
    "munged": "munged",
    "mariadbd": "mariadbd",
    "slurmdbd": "slurmdbd",
    "slurmctld": "slurmctld",
    "slurmrestd": "slurmrestd",
}
log = logging.getLogger("aipool.lab")


@dataclass
class Report:
    """What one ``up`` did, step by step, with timings."""

    steps: list[tuple[str, float]] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    t0: float = field(default_factory=time.monotonic)

    def step(self, what: str) -> None:
        self.steps.append((what, time.monotonic() - self.t0))

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.t0


class Lab:
    def __init__(self, cfg: LabConfig | None = None) -> None:
        self.cfg = cfg or LabConfig.from_env()
        shape = self.ledger()
        if shape.get("controllers", 1) != self.cfg.controllers:
            # a lab keeps the shape it was brought up with until it is taken down
            self.cfg = self.cfg.with_controllers(int(shape["controllers"]))
        self.client = SlurmClient(env=self.cfg.env(), timeout=20)

    # ------------------------------------------------------------------ shape
    @property
    def cluster_count(self) -> int:
        """How many clusters this lab runs (``up --clusters``), 1 unless asked."""
        return int(self.ledger().get("clusters", 1))

    def members(self, count: int | None = None) -> list[LabConfig]:
        """The further clusters (2, 3, ...) that share this lab's slurmdbd."""
        n = self.cluster_count if count is None else count
        return [self.cfg.member(i) for i in range(2, n + 1)]

    def cluster_configs(self) -> list[LabConfig]:
        """Every cluster of the lab, this one first."""
        return [self.cfg, *self.members()]

    # ------------------------------------------------------------------ ledger
    def ledger(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.cfg.ledger.read_text())
            return data
        except (OSError, ValueError):
            return {"daemons": {}, "users_created": []}

    def _save(self, ledger: dict[str, Any]) -> None:
        tmp = self.cfg.ledger.with_suffix(".tmp")
        tmp.write_text(json.dumps(ledger, indent=2, sort_keys=True))
        tmp.replace(self.cfg.ledger)

    def _running(self, ledger: dict[str, Any], name: str) -> bool:
        entry = ledger["daemons"].get(name)
        return bool(entry) and daemons.alive(entry["pid"], entry["expect"])

    def start(
        self,
        ledger: dict[str, Any],
        report: Report,
        name: str,
        argv: list[str],
        *,
        expect: str,
        user: str | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> int:
        if self._running(ledger, name):
            report.reused.append(name)
            return int(ledger["daemons"][name]["pid"])
        proc = daemons.spawn(
            name,
            argv,
            log=self.cfg.log / f"{name}.out",
            user=user,
            env={**self.cfg.env(), **(env or {})},
            # the lab's own directory, never the caller's: a checkout that starts the lab may
            # go away while its daemons run (slurmrestd 22.05 dies on a submission when its
            # working directory is gone)
            cwd=cwd or self.cfg.root,
        )
        ledger["daemons"][name] = {"pid": proc.pid, "expect": expect, "argv": list(proc.argv)}
        self._save(ledger)
        report.started.append(name)
        return proc.pid

    # ------------------------------------------------------------------ up
    def inventory(self) -> Inventory:
        return load_inventory(self.cfg.inventory).with_device_dir(str(self.cfg.dev))

    def up(
        self,
        progress: Callable[[str], None] = lambda _: None,
        *,
        clusters: int | None = None,
        controllers: int | None = None,
    ) -> Report:
        """Start (or complete) the lab; ``clusters`` > 1 adds clusters sharing its slurmdbd,
        ``controllers`` > 1 runs backup controllers. Both default to the running lab's shape."""
        preflight.check()
        preflight.check_runtime(self.cfg.runtime)
        report = Report()
        stale = self.ledger()
        if stale["daemons"] and not any(self._running(stale, n) for n in stale["daemons"]):
            # a lab whose daemons all died with the machine or session: its saved job state
            # would come back as RUNNING on nodes that run nothing, so start clean
            log.warning("found a lab whose daemons are all gone: wiping its state first")
            self.down(wipe=True)
            report.step("stale lab wiped")
            stale = self.ledger()
        self._set_shape(stale, clusters, controllers)
        cfg = self.cfg
        inv = self.inventory()
        tenants = load_tenants(cfg.tenants)
        created = [host.SERVICE_USER] if host.ensure_service_account() else []
        self._prepare_dirs(inv)
        ledger = self.ledger()
        ledger["controllers"] = cfg.controllers
        changed = self._write_configs(inv)
        created += host.ensure_unix_users(tenants.unix_users)
        ledger["users_created"] = sorted(set(ledger.get("users_created", [])) | set(created))
        self._save(ledger)
        report.step("configs, devices, users")
        progress("configs rendered")

        self._munge(ledger, report)
        report.step("munge")
        self._mariadb(ledger, report)
        report.step("mariadb")
        self._slurmdbd(ledger, report)
        progress("accounting up")

        was_running = self._running(ledger, "slurmctld")
        self._controllers(ledger, report)
        report.step("slurmctld" if cfg.controllers == 1 else f"slurmctld x{cfg.controllers}")
        self._slurmds(ledger, report, cfg, inv)
        report.step(f"slurmd x{len(inv.nodes)}")
        if was_running and {"slurm.conf", "gres.conf"} & set(changed):
            # a running cluster picks up a new slurm.conf on reconfigure; new nodes or GRES
            # need a restart (`aipool lab down --keep-state` then `up`)
            self.client.reconfigure()
            report.step("reconfigure")
        progress("nodes up")

        self.client.ensure_tenants(tenants.qos, tenants.accounts, tenants.users)
        # AIPool's services act for others: job priorities, node weights, drains, all usage
        self.client.ensure_admin_level(host.SERVICE_USER)
        report.step("tenants")
        pid = self.start(
            ledger,
            report,
            "slurmrestd",
            [
                "slurmrestd",
                "-a",
                "rest_auth/jwt",
                "-s",
                rest_plugins(host.slurm_release()),
                f"{cfg.address}:{cfg.ports.slurmrestd}",
            ],
            expect="slurmrestd",
            user=cfg.rest_user,
            env={"SLURM_JWT": "daemon"},
        )
        daemons.wait_for(
            "slurmrestd", self._rest_answers, timeout=20, pid=pid, log=cfg.log / "slurmrestd.out"
        )
        report.step("slurmrestd")
        for member in self.members(ledger.get("clusters", 1)):
            self._member_up(ledger, report, member, tenants)
            progress(f"cluster {member.cluster} up")
        ledger["up"] = True
        self._save(ledger)
        return report

    def _set_shape(
        self, ledger: dict[str, Any], clusters: int | None, controllers: int | None
    ) -> None:
        """Record how many clusters and controllers this lab has; a running lab keeps its
        controllers, and gains (never silently loses) clusters."""
        running = any(self._running(ledger, n) for n in ledger["daemons"])
        have_clusters = int(ledger.get("clusters", 1))
        if clusters is not None:
            if not 1 <= clusters <= MAX_CLUSTERS:
                raise LabError(f"--clusters must be 1..{MAX_CLUSTERS}, not {clusters}")
            if running and clusters < have_clusters:
                raise LabError(
                    f"the lab runs {have_clusters} clusters: `aipool lab down` it before "
                    f"bringing it up with {clusters}"
                )
            ledger["clusters"] = clusters
        if controllers is not None:
            try:
                wanted = self.cfg.with_controllers(controllers)
            except ValueError as exc:
                raise LabError(str(exc)) from exc
            if running and controllers != int(ledger.get("controllers", 1)):
                raise LabError(
                    f"the lab runs {ledger.get('controllers', 1)} controller(s): "
                    f"`aipool lab down` it before bringing it up with {controllers}"
                )
            self.cfg = wanted
            self.client = SlurmClient(env=self.cfg.env(), timeout=20)
        ledger["controllers"] = self.cfg.controllers
        self._save_shape(ledger)

    def _save_shape(self, ledger: dict[str, Any]) -> None:
        self.cfg.root.mkdir(parents=True, exist_ok=True)
        current = self.ledger()
        current["clusters"] = ledger.get("clusters", 1)
        current["controllers"] = ledger["controllers"]
        self._save(current)
        ledger.update(current)

    # ------------------------------------------------------------------ controllers
    def controller_name(self, index: int) -> str:
        """Ledger name of controller ``index`` (1 = primary)."""
        return "slurmctld" if index == 1 else f"slurmctld-{index}"

    def _controllers(self, ledger: dict[str, Any], report: Report) -> None:
        self.start_controller(1, ledger=ledger, report=report)
        pid = int(ledger["daemons"]["slurmctld"]["pid"])
        ctld_log = self.cfg.log / "slurmctld.log"
        if self.cfg.controllers == 1:
            daemons.wait_for("slurmctld", self.client.ping, timeout=30, pid=pid, log=ctld_log)
            return
        # backups join a primary that serves: a starting primary asks every backup to stand
        # down, and 24.11's waits out its message timeout on a backup that is starting too
        daemons.wait_for("slurmctld primary", self._primary_up, timeout=30, pid=pid, log=ctld_log)
        for index in range(2, self.cfg.controllers + 1):
            self.start_controller(index, ledger=ledger, report=report)
        daemons.wait_for(
            "slurmctld primary and backups",
            self._all_controllers_up,
            timeout=30,
            log=self.cfg.log / "slurmctld.log",
        )

    def _primary_up(self) -> bool:
        try:
            ctlds = self.client.controllers()
        except SlurmError:
            return False
        return bool(ctlds) and ctlds[0].up

    def _all_controllers_up(self) -> bool:
        try:
            ctlds = self.client.controllers()
        except SlurmError:
            return False
        return len(ctlds) == self.cfg.controllers and all(c.up for c in ctlds)

    def start_controller(
        self,
        index: int,
        *,
        ledger: dict[str, Any] | None = None,
        report: Report | None = None,
    ) -> int:
        """Start controller ``index`` (1 = primary) unless it runs; returns its PID.

        With backups, each runs in its own UTS and mount namespaces (:mod:`aipool.lab.nsexec`)
        so that it sees its own host name and binds to its own loopback address.
        """
        cfg = self.cfg
        if not 1 <= index <= cfg.controllers:
            raise LabError(f"this lab has controllers 1..{cfg.controllers}, not {index}")
        ledger = self.ledger() if ledger is None else ledger
        report = Report() if report is None else report
        name = self.controller_name(index)
        if cfg.controllers == 1:
            argv = self.as_lab_host(cfg, ["slurmctld", "-D"])
            return self.start(ledger, report, name, argv, expect="slurmctld")
        host_name, _ = cfg.controller_hosts[index - 1]
        hosts_file = cfg.etc / f"hosts-ctl{index}"
        run_dir = cfg.run / f"ctld-{index}"
        run_dir.mkdir(parents=True, exist_ok=True)
        cfg.ctld_run.mkdir(parents=True, exist_ok=True)
        lines = ["127.0.0.1 localhost"]
        lines += [f"{addr} {n}" for n, addr in cfg.controller_hosts]
        hosts_file.write_text("\n".join(lines) + "\n")
        hosts_file.chmod(0o644)
        log_file = cfg.log / ("slurmctld.log" if index == 1 else f"slurmctld-{index}.log")
        argv = nsexec_argv(
            sys.executable,
            host_name,
            [(str(hosts_file), "/etc/hosts"), (str(run_dir), str(cfg.ctld_run))],
            ["slurmctld", "-D", "-L", str(log_file)],
        )
        return self.start(ledger, report, name, argv, expect="slurmctld")

    def state_saved_at(self) -> float:
        """When the controller in charge last wrote its job state (shared StateSaveLocation)."""
        try:
            return (self.cfg.state / "job_state").stat().st_mtime
        except FileNotFoundError:
            return 0.0

    def wait_state_saved(self, since: float, *, timeout: float = 30) -> float:
        """Wait until the job state on disk is newer than ``since`` (a ``time.time()``).

        slurmctld writes it asynchronously, a few seconds after a job changed. Before crashing
        a controller, wait for this (else the latest jobs are lost with it); before bringing
        the primary back to a backup that has just taken over, change a job and wait for this:
        the write proves the backup's state-save thread runs (22.05 can hang for good when
        asked to hand control back before that thread has started). Returns the seconds
        waited."""
        return daemons.wait_for(
            "job state saved", lambda: self.state_saved_at() > since, timeout=timeout
        )

    def heal_controllers(self, *, timeout: float = 60) -> list[int]:
        """Bring every controller back to answering: start the stopped ones, and kill and
        restart one whose process runs but does not answer (22.05 can hang for good in
        "Saving all slurm state" when asked to hand control back just after it took over with
        a failed slurmdbd connection). Returns the indexes it had to act on."""
        acted = []
        ctlds = self.client.controllers()
        for c in ctlds:
            index = c.index + 1
            if c.up:
                continue
            if self.controller_running(index):
                self.stop_controller(index, crash=True)
            self.start_controller(index)
            acted.append(index)
        if acted:
            daemons.wait_for(
                "controllers answering", self._all_controllers_up, timeout=timeout, interval=0.2
            )
        return acted

    def controller_running(self, index: int) -> bool:
        return self._running(self.ledger(), self.controller_name(index))

    def stop_controller(self, index: int, *, crash: bool = False) -> bool:
        """Stop controller ``index`` for maintenance (SIGTERM: it saves its state), or with
        ``crash`` as a machine failure would (SIGKILL); False if it was not running.

        It stays in the ledger, so ``start_controller`` brings it back and ``is_up`` is False
        meanwhile."""
        ledger = self.ledger()
        entry = ledger["daemons"].get(self.controller_name(index))
        if not entry or not daemons.alive(entry["pid"], entry["expect"]):
            return False
        if crash:
            daemons.kill(entry["pid"], entry["expect"])
        else:
            daemons.stop([(entry["pid"], entry["expect"])])
        return True

    # ------------------------------------------------------------------ nodes, members
    def _slurmds(
        self, ledger: dict[str, Any], report: Report, cfg: LabConfig, inv: Inventory
    ) -> None:
        prefix = "" if cfg is self.cfg else f"{cfg.cluster}/"
        found = power.lab_power(cfg)
        saved = set(found[0].nodes) if found else set()
        if saved:
            # the elastic nodes start powered down: Slurm has their slurmd started on resume
            power.install_starter(cfg, tuple(sorted(saved)), self.slurmd_argv)
        for node in inv.nodes:
            if node.name in saved:
                continue
            self.start(
                ledger,
                report,
                f"{prefix}slurmd-{node.name}",
                self.as_lab_host(cfg, ["slurmd", "-D", "-N", node.name]),
                expect="slurmd",
                env=cfg.env(),
            )
        client = self.client if cfg is self.cfg else SlurmClient(env=cfg.env(), timeout=20)
        names = {n.name for n in inv.nodes} - saved
        daemons.wait_for(
            f"{cfg.cluster}: slurmd nodes idle",
            lambda: _nodes_up(client, names),
            timeout=60,
            log=cfg.log / "slurmctld.log",
            interval=0.1,
        )

    def slurmd_argv(self, node: str) -> list[str]:
        """How a power-saved node's slurmd starts: as the others, with ``-b`` so that Slurm
        sees a fresh boot on every resume."""
        return self.as_lab_host(self.cfg, ["slurmd", "-D", "-b", "-N", node])

    def _member_up(
        self, ledger: dict[str, Any], report: Report, member: LabConfig, tenants: Tenants
    ) -> None:
        """A further cluster: own configs, slurmctld and slurmd; this lab's slurmdbd."""
        inv = load_inventory(member.inventory).with_device_dir(str(member.dev))
        for d in (member.etc, member.state, member.spool, member.log, member.run, member.dev):
            d.mkdir(parents=True, exist_ok=True)
        member.jobs.mkdir(exist_ok=True)
        member.jobs.chmod(0o1777)
        host.make_fake_devices(inv)
        if not member.jwt_key.exists():
            host.write_private(member.jwt_key, secrets.token_bytes(32))
        host.give_key_to_token_service(member.jwt_key)
        host.make_service_dir(member.admission, 0o755)
        self._write_files(member, inv)
        self.client.add_cluster(member.cluster)
        client = SlurmClient(env=member.env(), timeout=20)
        name = f"{member.cluster}/slurmctld"
        argv = self.as_lab_host(member, ["slurmctld", "-D"])
        pid = self.start(ledger, report, name, argv, expect="slurmctld", env=member.env())
        daemons.wait_for(name, client.ping, timeout=30, pid=pid, log=member.log / "slurmctld.log")
        self._slurmds(ledger, report, member, inv)
        client.ensure_tenants(tenants.qos, tenants.accounts, tenants.users, cluster=member.cluster)
        report.step(f"cluster {member.cluster}")

    def _prepare_dirs(self, inv: Inventory) -> None:
        cfg = self.cfg
        cfg.root.mkdir(parents=True, exist_ok=True)
        cfg.root.chmod(0o755)
        for d in (cfg.etc, cfg.state, cfg.spool, cfg.log, cfg.run, cfg.dev, cfg.mysql):
            d.mkdir(parents=True, exist_ok=True)
        cfg.jobs.mkdir(exist_ok=True)
        cfg.jobs.chmod(0o1777)
        shutil.chown(cfg.mysql, "mysql", "mysql")
        host.make_service_dir(cfg.admission, 0o755)  # the portal writes the admission table
        host.make_fake_devices(inv)

    def _write_configs(self, inv: Inventory) -> list[str]:
        """Render every config file; returns the names whose content changed."""
        cfg = self.cfg
        pw_file = cfg.etc / "db_password"
        if not pw_file.exists():
            host.write_private(pw_file, secrets.token_hex(16))
        if not cfg.jwt_key.exists():
            host.write_private(cfg.jwt_key, secrets.token_bytes(32))
        # Slurm (root here) and the token service read it; the portal asks the token service
        host.give_key_to_token_service(cfg.jwt_key)
        return self._write_files(cfg, inv)

    def _write_files(self, cfg: LabConfig, inv: Inventory) -> list[str]:
        """Render ``cfg``'s config files (any cluster of the lab) and write what changed."""
        pw_file = self.cfg.etc / "db_password"
        # every daemon binds to the lab's own address, whatever this host's name resolves to
        files = render_lab(
            cfg,
            inv,
            db_password=pw_file.read_text().strip(),
            job_submit=True,
            release=host.slurm_release(),
        )
        changed = []
        for name, text in files.items():
            path = cfg.etc / name
            if path.exists() and path.read_text() == text:
                continue
            changed.append(name)
            if name == "slurmdbd.conf":
                host.write_private(path, text)  # slurmdbd refuses a world-readable config
            elif Path(name).name in (HOOK_FILE, TABLE_FILE):
                # slurmctld re-reads these by mtime while it runs: never show it half a file
                replace_atomically(path, text.encode())
            else:
                path.write_text(text)
                path.chmod(0o755 if name.endswith(".sh") else 0o644)
        return changed

    def as_lab_host(self, cfg: LabConfig, argv: list[str]) -> list[str]:
        """``argv`` run where this host's name resolves to the lab's address.

        With ``NoInAddrAny`` slurmdbd and slurmd listen on the address of ``gethostname()``,
        while the lab's clients dial ``cfg.address``. On a stock Debian host the name resolves
        to 127.0.1.1 (the installer's ``/etc/hosts``), elsewhere to ::1 or a real address. So
        each daemon runs in its own UTS and mount namespaces (:mod:`aipool.lab.nsexec`) with the
        host's own name and a private ``/etc/hosts`` that maps it to ``cfg.address``; the host's
        file is never changed, and the jobs slurmd starts see the same view.
        """
        name = socket.gethostname()
        hosts = cfg.etc / "hosts"
        text = f"127.0.0.1 localhost\n{cfg.address} {name}\n"
        if not hosts.exists() or hosts.read_text() != text:
            hosts.write_text(text)
            hosts.chmod(0o644)
        return nsexec_argv(sys.executable, name, [(str(hosts), "/etc/hosts")], argv)

    def address_note(self) -> str:
        """Where this host's name resolves outside the lab, said beside the lab's address."""
        name = socket.gethostname()
        try:
            outside = sorted({str(a[4][0]) for a in socket.getaddrinfo(name, None)})
        except OSError:
            outside = []
        seen = ", ".join(outside) or "nothing"
        return f"host name {name} resolves to {seen}; the lab's daemons see {self.cfg.address}"

    def _munge(self, ledger: dict[str, Any], report: Report) -> None:
        if host.munge_works() and not self._running(ledger, "munged"):
            report.reused.append("munged (host)")
            return
        Path("/run/munge").mkdir(parents=True, exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        key = Path("/etc/munge/munge.key")
        if not key.exists():
            subprocess.run(["mungekey", "--create", f"--keyfile={key}"], check=True)
            shutil.chown(key, "munge", "munge")
        pid = self.start(ledger, report, "munged", ["munged", "-F"], expect="munged", user="munge")
        daemons.wait_for(
            "munged", host.munge_works, timeout=10, pid=pid, log=self.cfg.log / "munged.out"
        )

    def _slurmdbd(self, ledger: dict[str, Any], report: Report) -> None:
        cfg = self.cfg
        log.info("lab address %s: %s", cfg.address, self.address_note())
        argv = self.as_lab_host(cfg, ["slurmdbd", "-D"])
        pid = self.start(ledger, report, "slurmdbd", argv, expect="slurmdbd")
        daemons.wait_for(
            "slurmdbd", self._dbd_answers, timeout=30, pid=pid, log=cfg.log / "slurmdbd.log"
        )
        self.client.add_cluster(cfg.cluster)
        report.step("slurmdbd")

    def _mariadb(self, ledger: dict[str, Any], report: Report) -> None:
        cfg = self.cfg
        host.install_mariadb_datadir(cfg)
        pid = self.start(ledger, report, "mariadbd", host.mariadbd_argv(cfg), expect="mariadbd")
        daemons.wait_for(
            "mariadb",
            lambda: host.mariadb_answers(cfg),
            timeout=30,
            pid=pid,
            log=cfg.mysql / "mariadb.err",
        )
        host.create_slurm_database(cfg, (cfg.etc / "db_password").read_text().strip())

    # ------------------------------------------------------------------ readiness checks
    def _dbd_answers(self) -> bool:
        try:
            self.client.clusters()
        except SlurmError:
            return False
        return True

    def _nodes_up(self, names: set[str]) -> bool:
        return _nodes_up(self.client, names)

    def _rest_answers(self) -> bool:
        try:
            httpx.get(f"{self.cfg.rest_url}/openapi/v3", timeout=2)
        except httpx.HTTPError:
            return False
        return True

    # ------------------------------------------------------------------ down / status
    def is_up(self) -> bool:
        """Every Slurm-side daemon runs (a dead AIPool service does not take the lab down:
        ``aipool lab services up`` starts it again)."""
        ledger = self.ledger()
        return bool(ledger.get("up")) and all(
            self._running(ledger, name) for name in ledger["daemons"] if is_slurm_side(name)
        )

    def status(self) -> dict[str, Any]:
        ledger = self.ledger()
        procs = {
            name: {"pid": e["pid"], "running": daemons.alive(e["pid"], e["expect"])}
            for name, e in sorted(ledger["daemons"].items())
        }
        return {
            "root": str(self.cfg.root),
            "cluster": self.cfg.cluster,
            "clusters": [c.cluster for c in self.cluster_configs()],
            "controllers": [name for name, _ in self.cfg.controller_hosts],
            "address": self.cfg.address,
            "address_note": self.address_note(),
            "up": self.is_up(),
            "daemons": procs,
            # where the services serve /metrics, as the rendered Prometheus configuration says
            "metrics": metrics.endpoints(self.cfg),
        }

    def down(self, *, wipe: bool = True) -> list[str]:
        """Cancel all jobs, stop what ``up`` started (slurm daemons in parallel), wipe state."""
        ledger = self.ledger()
        entries = ledger["daemons"]
        stopped: list[str] = []

        def stop(names: list[str], also: list[tuple[int, str]] | None = None) -> None:
            present = [n for n in names if n in entries]
            daemons.stop(
                [*((entries[n]["pid"], entries[n]["expect"]) for n in present), *(also or [])]
            )
            stopped.extend(present)

        # AIPool's own services first: nothing may act on the cluster while it drains
        stop([n for n in entries if not is_slurm_side(n)])
        if any(self._running(ledger, n) for n in entries if _base(n) == "slurmctld"):
            self._drain_jobs()  # one controller (primary or backup) answering is enough
        for member in self.members():
            if self._running(ledger, f"{member.cluster}/slurmctld"):
                self._drain_jobs(SlurmClient(env=member.env(), timeout=20))
        # every cluster's slurmd and controllers at once (each takes ~2 s after SIGTERM), the
        # elastic nodes' too (started by the lab's power starter, not in the ledger)
        elastic = power.started(self.cfg)
        nodes = [n for n in entries if _base(n).startswith(("slurmd-", "slurmctld"))]
        stop([*nodes, "slurmrestd"], elastic)
        stop(["slurmdbd"])
        stop(["mariadbd", "munged"])
        ledger["daemons"] = {}
        ledger["up"] = False
        if wipe:
            for d in (
                self.cfg.state,
                self.cfg.spool,
                self.cfg.log,
                self.cfg.run,
                self.cfg.mysql,
                self.cfg.jobs,
                self.cfg.etc,
                self.cfg.dev,
                self.cfg.root / "portal",
                self.cfg.root / "policy",
                self.cfg.root_helper.parent,
                self.cfg.clusters_dir,
                self.cfg.power_dir,
            ):
                shutil.rmtree(d, ignore_errors=True)
            self.cfg.ledger.unlink(missing_ok=True)
            # the root helper's sudoers rule goes with the lab (services.install_helper)
            self.cfg.sudoers_file.unlink(missing_ok=True)
            self.cfg.power_sudoers.unlink(missing_ok=True)
            self.cfg.power_refuse.unlink(missing_ok=True)
        else:
            self._save(ledger)
        return stopped

    def stop_named(self, names: tuple[str, ...]) -> list[str]:
        """Stop some of what ``up`` started (e.g. the AIPool services) and forget them."""
        ledger = self.ledger()
        present = [n for n in names if n in ledger["daemons"]]
        daemons.stop((ledger["daemons"][n]["pid"], ledger["daemons"][n]["expect"]) for n in present)
        for n in present:
            del ledger["daemons"][n]
        self._save(ledger)
        return present

    def _drain_jobs(self, client: SlurmClient | None = None) -> None:
        """Cancel every job and wait until the controller has none (else steps are orphaned)."""
        client = client or self.client
        try:
            jobs = client.jobs()
            client.cancel(sorted({j.job_id for j in jobs}))
            daemons.wait_for("jobs cancelled", lambda: not client.jobs(), timeout=30, interval=0.2)
        except (SlurmError, LabError):
            pass  # a broken controller must not keep us from stopping the daemons

    def env_exports(self) -> str:
        """Shell exports for the lab's Slurm and the job runtime (``eval "$(aipool lab env)"``)."""
        lines = [f"export {k}={shlex.quote(v)}" for k, v in self.cfg.env().items()]
        lines.append(f"export AIPOOL_LAB_DIR={shlex.quote(str(self.cfg.root))}")
        lines.append(f"export AIPOOL_RUNTIME={shlex.quote(str(self.cfg.runtime))}")
        return "\n".join(lines)


_SLURM_SIDE = ("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmrestd", "slurmd-")


def is_slurm_side(name: str) -> bool:
    """A Slurm-side daemon of the lab (else one of AIPool's services)."""
    return _base(name).startswith(_SLURM_SIDE)


def _base(name: str) -> str:
    """A ledger name without its cluster prefix (``aipool2/slurmd-bgpu1`` -> ``slurmd-bgpu1``)."""
    return name.rsplit("/", 1)[-1]


def _nodes_up(client: SlurmClient, names: set[str]) -> bool:
    try:
        nodes = client.nodes()
    except SlurmError:
        return False
    up = {n.name for n in nodes if n.available and n.state.value in {"IDLE", "MIXED", "ALLOCATED"}}
    return names <= up
