"""``aipool lab up | down | status | env``: a real Slurm cluster on this one host.

munge, MariaDB (own datadir under the lab root), slurmdbd, slurmctld, one ``slurmd -N`` per
inventory node and slurmrestd (JWT, loopback only). What ``up`` starts is written to a ledger
so ``down`` stops only that, by PID, and then wipes the lab's state.
"""

from __future__ import annotations

import json
import logging
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from aipool.lab import daemons, host, preflight
from aipool.lab.config import LabConfig
from aipool.lab.daemons import LabError
from aipool.lab.render import hostname_is_loopback, render_lab
from aipool.lab.tenants import load_tenants
from gres.inventory import Inventory, load_inventory
from slurm_plugins.admission import HOOK_FILE, TABLE_FILE
from slurm_plugins.admission.render import replace_atomically
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.errors import SlurmError

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
        self.client = SlurmClient(env=self.cfg.env(), timeout=20)

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
        )
        ledger["daemons"][name] = {"pid": proc.pid, "expect": expect, "argv": list(proc.argv)}
        self._save(ledger)
        report.started.append(name)
        return proc.pid

    # ------------------------------------------------------------------ up
    def inventory(self) -> Inventory:
        return load_inventory(self.cfg.inventory).with_device_dir(str(self.cfg.dev))

    def up(self, progress: Callable[[str], None] = lambda _: None) -> Report:
        preflight.check()
        cfg, report = self.cfg, Report()
        stale = self.ledger()
        if stale["daemons"] and not any(self._running(stale, n) for n in stale["daemons"]):
            # a lab whose daemons all died with the machine or session: its saved job state
            # would come back as RUNNING on nodes that run nothing, so start clean
            log.warning("found a lab whose daemons are all gone: wiping its state first")
            self.down(wipe=True)
            report.step("stale lab wiped")
        inv = self.inventory()
        tenants = load_tenants(cfg.tenants)
        self._prepare_dirs(inv)
        ledger = self.ledger()
        changed = self._write_configs(inv)
        created = host.ensure_unix_users(tenants.unix_users)
        ledger["users_created"] = sorted(set(ledger.get("users_created", [])) | set(created))
        self._save(ledger)
        report.step("configs, devices, users")
        progress("configs rendered")

        self._munge(ledger, report)
        report.step("munge")
        self._mariadb(ledger, report)
        report.step("mariadb")
        pid = self.start(ledger, report, "slurmdbd", ["slurmdbd", "-D"], expect="slurmdbd")
        daemons.wait_for(
            "slurmdbd", self._dbd_answers, timeout=30, pid=pid, log=cfg.log / "slurmdbd.log"
        )
        self.client.add_cluster(cfg.cluster)
        report.step("slurmdbd")
        progress("accounting up")

        was_running = self._running(ledger, "slurmctld")
        pid = self.start(ledger, report, "slurmctld", ["slurmctld", "-D"], expect="slurmctld")
        daemons.wait_for(
            "slurmctld", self.client.ping, timeout=30, pid=pid, log=cfg.log / "slurmctld.log"
        )
        report.step("slurmctld")
        for node in inv.nodes:
            self.start(
                ledger,
                report,
                f"slurmd-{node.name}",
                ["slurmd", "-D", "-N", node.name],
                expect="slurmd",
            )
        names = {n.name for n in inv.nodes}
        daemons.wait_for(
            "slurmd nodes idle",
            lambda: self._nodes_up(names),
            timeout=60,
            log=cfg.log / "slurmctld.log",
            interval=0.1,
        )
        report.step(f"slurmd x{len(names)}")
        if was_running and {"slurm.conf", "gres.conf"} & set(changed):
            # a running cluster picks up a new slurm.conf on reconfigure; new nodes or GRES
            # need a restart (`aipool lab down --keep-state` then `up`)
            self.client.reconfigure()
            report.step("reconfigure")
        progress("nodes up")

        self.client.ensure_tenants(tenants.qos, tenants.accounts, tenants.users)
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
                "openapi/v0.0.38,openapi/dbv0.0.38",
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
        ledger["up"] = True
        self._save(ledger)
        return report

    def _prepare_dirs(self, inv: Inventory) -> None:
        cfg = self.cfg
        cfg.root.mkdir(parents=True, exist_ok=True)
        cfg.root.chmod(0o755)
        for d in (cfg.etc, cfg.state, cfg.spool, cfg.log, cfg.run, cfg.dev, cfg.mysql):
            d.mkdir(parents=True, exist_ok=True)
        cfg.jobs.mkdir(exist_ok=True)
        cfg.jobs.chmod(0o1777)
        shutil.chown(cfg.mysql, "mysql", "mysql")
        host.make_fake_devices(inv)

    def _write_configs(self, inv: Inventory) -> list[str]:
        """Render every config file; returns the names whose content changed."""
        cfg = self.cfg
        pw_file = cfg.etc / "db_password"
        if not pw_file.exists():
            host.write_private(pw_file, secrets.token_hex(16))
        if not cfg.jwt_key.exists():
            host.write_private(cfg.jwt_key, secrets.token_bytes(32))
        loopback = hostname_is_loopback()
        if not loopback:
            log.warning("host name does not resolve to 127.*: Slurm daemons bind to 0.0.0.0")
        files = render_lab(
            cfg,
            inv,
            db_password=pw_file.read_text().strip(),
            job_submit=True,
            loopback_only=loopback,
        )
        changed = []
        for name, text in files.items():
            path = cfg.etc / name
            if path.exists() and path.read_text() == text:
                continue
            changed.append(name)
            if name == "slurmdbd.conf":
                host.write_private(path, text)  # slurmdbd refuses a world-readable config
            elif name in (HOOK_FILE, TABLE_FILE):
                # slurmctld re-reads these by mtime while it runs: never show it half a file
                replace_atomically(path, text.encode())
            else:
                path.write_text(text)
                path.chmod(0o755 if name.endswith(".sh") else 0o644)
        return changed

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
        try:
            nodes = self.client.nodes()
        except SlurmError:
            return False
        up = {
            n.name for n in nodes if n.available and n.state.value in {"IDLE", "MIXED", "ALLOCATED"}
        }
        return names <= up

    def _rest_answers(self) -> bool:
        try:
            httpx.get(f"{self.cfg.rest_url}/openapi/v3", timeout=2)
        except httpx.HTTPError:
            return False
        return True

    # ------------------------------------------------------------------ down / status
    def is_up(self) -> bool:
        ledger = self.ledger()
        return bool(ledger.get("up")) and all(
            self._running(ledger, name) for name in ledger["daemons"]
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
            "up": self.is_up(),
            "daemons": procs,
        }

    def down(self, *, wipe: bool = True) -> list[str]:
        """Cancel all jobs, stop what ``up`` started (slurm daemons in parallel), wipe state."""
        ledger = self.ledger()
        entries = ledger["daemons"]
        stopped: list[str] = []

        def stop(names: list[str]) -> None:
            present = [n for n in names if n in entries]
            daemons.stop((entries[n]["pid"], entries[n]["expect"]) for n in present)
            stopped.extend(present)

        # AIPool's own services first: nothing may act on the cluster while it drains
        stop([n for n in entries if not _is_slurm_side(n)])
        if self._running(ledger, "slurmctld"):
            self._drain_jobs()
        stop([n for n in entries if n.startswith("slurmd-")] + ["slurmctld", "slurmrestd"])
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
            ):
                shutil.rmtree(d, ignore_errors=True)
            self.cfg.ledger.unlink(missing_ok=True)
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

    def _drain_jobs(self) -> None:
        """Cancel every job and wait until the controller has none (else steps are orphaned)."""
        try:
            jobs = self.client.jobs()
            self.client.cancel(sorted({j.job_id for j in jobs}))
            daemons.wait_for(
                "jobs cancelled", lambda: not self.client.jobs(), timeout=30, interval=0.2
            )
        except (SlurmError, LabError):
            pass  # a broken controller must not keep us from stopping the daemons

    def env_exports(self) -> str:
        lines = [f"export {k}={v}" for k, v in self.cfg.env().items()]
        lines.append(f"export AIPOOL_LAB_DIR={self.cfg.root}")
        return "\n".join(lines)


_SLURM_SIDE = ("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmrestd", "slurmd-")


def _is_slurm_side(name: str) -> bool:
    return name.startswith(_SLURM_SIDE)
