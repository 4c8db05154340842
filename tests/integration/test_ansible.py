"""The Ansible roles deploy a real cluster onto this host, and a second run changes nothing.

``ansible/site.yml`` runs with a local connection and ``aipool_service_manager: direct`` (this
host has no systemd) into its own prefix and ports (+500 over the lab's), so it never meets the
lab that CI runs at the same time: its own munged (own socket and key), MariaDB datadir,
slurmdbd, slurmctld, two ``slurmd -N`` nodes with fake A100s, slurmrestd, the admission hook,
the policy daemon, two node agents and the portal on SQLite, each serving its metrics, and
Debian's Prometheus scraping them; the host is a login node too, with the job runtime and the
users' ``aipool`` link under the prefix. Everything it started is
stopped by its PID file and the prefix is removed at the end.
"""

from __future__ import annotations

import json
import logging
import os
import pwd
import re
import shutil
import socket
import stat
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

from aipool.lab import daemons
from aipool.lab.config import LabConfig
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.errors import SlurmError
from slurm_plugins.client.models import JobState, NodeState
from slurm_plugins.client.rest import RestClient, read_key
from tests.integration.conftest import wait_until

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(1200)]

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[2]
ANSIBLE = REPO / "ansible"
PREFIX = Path("/tmp/aipool-ansible")
# the lab's ports + 500 (the lab under test's own offset, AIPOOL_LAB_PORT_OFFSET, included)
OFFSET = LabConfig.from_env().ports.offset + 500
CTLD, SLURMD, DBD, RESTD = 6817 + OFFSET, 6818 + OFFSET, 6819 + OFFSET, 6820 + OFFSET
MARIADB, PORTAL, NODE_BASE = 13306 + OFFSET, 8080 + OFFSET, 17001 + OFFSET
PROMETHEUS, POLICY_METRICS, AGENT_METRICS = 9090 + OFFSET, 9101 + OFFSET, 9102 + OFFSET
SCRAPE_TOKEN = "ansibletest-scrape-token"
CLUSTER = "ansibletest"
# the role's defaults under aipool_prefix: the job runtime, the users' command, their profile
RUNTIME = PREFIX / "opt/aipool/runtime"
CLI = PREFIX / "usr/local/bin/aipool"
PROFILE = PREFIX / "etc/profile.d/aipool.sh"
NODES = ("node1", "node2")
SERVICE_VENV = Path("/opt/aipool/runtime")  # scripts/install-runtime.sh
RECAP = re.compile(
    r"^(?P<host>\S+)\s*: ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+"
    r"unreachable=(?P<unreachable>\d+)\s+failed=(?P<failed>\d+)",
    re.MULTILINE,
)
# PID file name (prefix) -> what the process's command line must contain
EXPECT = {
    "aipool-": "aipool.cli",
    "slurmd-": "slurmd",
    "slurmctld": "slurmctld",
    "slurmrestd": "slurmrestd",
    "slurmdbd": "slurmdbd",
    "slurm-mariadb": "mariadbd",
    "munge": "munged",
    "prometheus": "prometheus",
}
STOP_ORDER = (
    ("prometheus", "aipool-"),
    ("slurmd-", "slurmctld", "slurmrestd"),
    ("slurmdbd",),
)
STOP_LAST = (("slurm-mariadb", "munge"),)


@dataclass(frozen=True, slots=True)
class Run:
    seconds: float
    ok: int
    changed: int
    failed: int
    output: str


def inventory(runtime_spec: list[str]) -> dict[str, object]:
    """The test site: one host that is controller, accounting, compute (two slurmd), REST,
    portal and login node, everything under PREFIX on ports of its own."""
    policy = yaml.safe_load((REPO / "slurm_plugins/admission/lab-policy.yaml").read_text())
    host = {"ansible_connection": "local", "ansible_host": "127.0.0.1"}
    host["ansible_python_interpreter"] = "/usr/bin/python3"
    settings = {
        "aipool_prefix": str(PREFIX),
        "aipool_service_manager": "direct",
        # bootstrap.sh installed the Debian packages; the roles still check the binaries
        "aipool_install_packages": False,
        # the services run as aipool, which cannot read a checkout's venv under /root: they
        # use the job runtime that bootstrap.sh installed from this checkout (readable by all)
        "aipool_venv": str(SERVICE_VENV),
        "aipool_python": str(SERVICE_VENV / "bin/python"),
        "munge_generate_key": True,
        "slurm_cluster_name": CLUSTER,
        "slurm_ctld_port": CTLD,
        "slurm_slurmd_port": SLURMD,
        "slurm_dbd_port": DBD,
        "slurm_restd_port": RESTD,
        "slurm_dbd_storage_port": MARIADB,
        "slurm_dbd_storage_pass": "ansibletest0123456789",
        "slurm_dbd_mariadb_buffer_pool": "128M",
        # A site's daemons bind to the address of their host name (NoInAddrAny). This one host
        # plays a whole site on 127.0.0.1: that works only where the host name resolves there
        # (a stock Debian /etc/hosts says 127.0.1.1); elsewhere the daemons listen on all
        # addresses, as a site's do without the loopback setting.
        "slurm_loopback_only": _resolves_to_loopback(),
        "slurm_job_submit_lua": True,
        "slurm_conf_extra": {
            "ProctrackType": "proctrack/linuxproc",
            "TaskPlugin": "task/none",
            "SlurmdParameters": "config_overrides",
            "MailProg": "/bin/true",
        },
        "slurm_partitions": [{"name": "gpu", "nodes": "node[1-2]", "default": True}],
        "slurm_compute_nodes": [
            {"name": n, "port": NODE_BASE + i, "addr": "127.0.0.1", "hostname": "localhost"}
            for i, n in enumerate(NODES)
        ],
        # fake A100s: declared, since the probe of this host finds no GPU
        "slurm_compute_gres": {
            "cpus": 8,
            "sockets": 1,
            "cores_per_socket": 8,
            "memory_mb": 16000,
            "device_dir": str(PREFIX / "dev"),
            "gpus": [{"model": "a100", "count": 2}],
        },
        "aipool_admission_policy": policy,
        "aipool_policy_daemon_config": {
            "version": 1,
            "interval": "30s",
            "policies": [{"name": "priority"}],
        },
        "aipool_node_agent_source": f"file:{PREFIX / 'util'}",
        "aipool_portal_port": PORTAL,
        "aipool_runtime_pip_spec": runtime_spec,
        # no lock: the test's runtime is this checkout and JupyterLab only (runtime_spec), not
        # the whole locked [lab] set with torch (tests/unit/ansible checks the lock's choice)
        "aipool_runtime_lock": "",
        # every daemon's /metrics, and Prometheus scraping them often enough for a test
        "aipool_policy_metrics": f"127.0.0.1:{POLICY_METRICS}",
        "aipool_node_agent_metrics_bind": "127.0.0.1",
        "aipool_node_agent_metrics_port": AGENT_METRICS,
        "aipool_portal_metrics_token": SCRAPE_TOKEN,
        "prometheus_listen": f"127.0.0.1:{PROMETHEUS}",
        "prometheus_scrape_interval": "2s",
        "prometheus_evaluation_interval": "5s",
    }
    groups = (
        "slurm_controller",
        "slurm_dbd",
        "slurm_compute",
        "slurm_restd",
        "aipool_portal",
        "aipool_login",
    )
    return {
        "all": {
            "hosts": {"localhost": host},
            "vars": settings,
            "children": {g: {"hosts": {"localhost": {}}} for g in groups},
        }
    }


def _resolves_to_loopback() -> bool:
    try:
        return socket.gethostbyname(socket.gethostname()) == "127.0.0.1"
    except OSError:
        return False


def runtime_spec(work: Path) -> list[str]:
    """The runtime's pip requirements: this checkout (a copy, so that the build never writes
    into the tree others edit) and the JupyterLab of the ``lab`` extra. A site installs the
    whole extra (torch and the presets' models too), which this test leaves out for time."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    src = work / "aipool-src"
    for name in ("pyproject.toml", "README.md"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, src / name)
    for pattern in project["tool"]["setuptools"]["packages"]["find"]["include"]:
        package = pattern.rstrip("*")
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        shutil.copytree(REPO / package, src / package, ignore=ignore)
    lab = project["project"]["optional-dependencies"]["lab"]
    return [str(src), *(d for d in lab if d.startswith(("jupyterlab", "jupyter-server")))]


def as_nobody(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """argv as the user nobody, in a clean environment (no root's HOME, PATH or venv)."""
    user = pwd.getpwnam("nobody")
    clean = {"PATH": f"{CLI.parent}:/usr/bin:/bin", "HOME": "/nonexistent"}
    switch = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
    return subprocess.run(
        [*switch, "env", "-i", *(f"{k}={v}" for k, v in clean.items()), *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd="/",
    )


def playbook(inv: Path, log_file: Path) -> Run:
    """Run site.yml; ok/changed/failed come from the PLAY RECAP."""
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(ANSIBLE / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_DISPLAY_SKIPPED_HOSTS": "false",
        "ANSIBLE_LOCAL_TEMP": str(PREFIX / "ansible-tmp"),
    }
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inv), "site.yml"]
    t0 = time.monotonic()
    done = subprocess.run(
        argv, cwd=ANSIBLE, env=env, capture_output=True, text=True, check=False, timeout=900
    )
    seconds = time.monotonic() - t0
    output = done.stdout + done.stderr
    log_file.write_text(output)
    recaps = [m for m in RECAP.finditer(output) if m["host"] == "localhost"]
    assert done.returncode == 0, f"ansible-playbook failed:\n{output[-12000:]}"
    assert recaps, f"no PLAY RECAP in:\n{output[-12000:]}"
    last = recaps[-1]
    return Run(seconds, int(last["ok"]), int(last["changed"]), int(last["failed"]), output)


def slurm() -> SlurmClient:
    return SlurmClient(env={"SLURM_CONF": str(PREFIX / "etc/slurm/slurm.conf")}, timeout=30)


def _expect(pidfile: Path) -> str | None:
    return next((e for p, e in EXPECT.items() if pidfile.name.startswith(p)), None)


def teardown() -> None:
    """Cancel the jobs, stop every daemon by its PID file (Slurm daemons in parallel), wipe."""
    piddir = PREFIX / "run/aipool-services"
    if (piddir / "slurmctld.pid").exists():
        client = slurm()
        try:
            client.cancel(sorted({j.job_id for j in client.jobs()}))
            wait_until(lambda: not client.jobs(), 30)
        except (SlurmError, AssertionError) as exc:
            log.warning("could not drain the jobs before stopping: %s", exc)
    pidfiles = sorted(piddir.glob("*.pid")) if piddir.is_dir() else []
    for group in (*STOP_ORDER, *STOP_LAST):
        targets = []
        for f in pidfiles:
            expect = _expect(f)
            if expect and f.name.startswith(group):
                try:
                    targets.append((int(f.read_text().strip()), expect))
                except (OSError, ValueError):
                    continue
        daemons.stop(targets)
    shutil.rmtree(PREFIX, ignore_errors=True)


@dataclass(frozen=True, slots=True)
class Site:
    first: Run
    inventory: Path
    work: Path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The deployed test site; the second run happens in its own test."""
    if not (Path(sys.executable).parent / "ansible-playbook").exists():
        pytest.fail("ansible-playbook is missing: install the dev extra (ansible-core)")
    teardown()  # leftovers of an interrupted run
    for d in ("dev", "util", "jobs"):
        (PREFIX / d).mkdir(parents=True, exist_ok=True)
    (PREFIX / "jobs").chmod(0o1777)
    for i in range(2):  # fake /dev/nvidiaN: character devices, as slurmd wants
        os.mknod(PREFIX / f"dev/nvidia{i}", 0o666 | stat.S_IFCHR, os.makedev(195, i))
    work = tmp_path_factory.mktemp("ansible")
    inv = work / "inventory.yml"
    inv.write_text(yaml.safe_dump(inventory(runtime_spec(work)), sort_keys=False))
    try:
        first = playbook(inv, work / "first.log")
        log.warning("first run: %.1f s, changed=%d", first.seconds, first.changed)
        yield Site(first, inv, work)
    finally:
        teardown()


def test_first_run_deploys(site: Site) -> None:
    first = site.first
    assert first.failed == 0
    assert first.changed > 20  # a fresh prefix: everything was created and started


def test_nodes_idle_with_their_gpus(site: Site) -> None:
    nodes = {n.name: n for n in slurm().nodes()}
    assert set(nodes) == set(NODES)
    for node in nodes.values():
        assert node.state is NodeState.IDLE, node
        assert node.port in {NODE_BASE, NODE_BASE + 1}
        count = {
            name: sum(g.count for g in node.gres if g.name == name) for name in ("gpu", "shard")
        }
        assert count == {"gpu": 2, "shard": 64}, node.gres
        assert {g.type for g in node.gres if g.name == "gpu"} == {"a100"}


def test_shard_job_sees_its_gpu_and_is_accounted(site: Site) -> None:
    client = slurm()
    script = (
        "#!/bin/bash\nset -euo pipefail\n"
        'echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}"\n'
        'echo "SLURM_SHARDS_ON_NODE=${SLURM_SHARDS_ON_NODE:-}"\n'
    )
    job_id = client.submit(
        script,
        [
            "--job-name=ansible-shard",
            f"--output={PREFIX}/jobs/shard-%j.out",
            f"--chdir={PREFIX}/jobs",
            "--gres=shard:8",
            "--time=5",
        ],
    )
    out = PREFIX / f"jobs/shard-{job_id}.out"
    wait_until(lambda: out.exists() and "SHARDS" in out.read_text(), 60)
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert env["CUDA_VISIBLE_DEVICES"] in {"0", "1"}
    assert env["SLURM_SHARDS_ON_NODE"] == "8"

    def recorded() -> bool:
        rec = [r for r in client.accounting(job_ids=[job_id]) if r.job_id == job_id]
        return bool(rec) and rec[0].state is JobState.COMPLETED and rec[0].cluster == CLUSTER

    wait_until(recorded, 60)


def test_restd_answers_with_a_token(site: Site) -> None:
    key = read_key(PREFIX / "etc/slurm/jwt_hs256.key")
    with RestClient(f"http://127.0.0.1:{RESTD}", "root", key=key) as rest:
        assert rest.ping()
        assert {n.name for n in rest.nodes()} == set(NODES)


def test_aipool_services_run(site: Site) -> None:
    assert (PREFIX / "etc/slurm/job_submit.lua").exists()
    login = httpx.get(f"http://127.0.0.1:{PORTAL}/login", timeout=10)
    assert login.status_code == 200
    piddir = PREFIX / "run/aipool-services"
    service_uid = pwd.getpwnam("aipool").pw_uid
    names = ("aipool-portal", "aipool-reconciler", "aipool-policy")
    for name in (*names, *(f"aipool-agent-{n}" for n in NODES)):
        pid = int((piddir / f"{name}.pid").read_text())
        assert daemons.alive(pid, "aipool.cli"), name
        assert Path(f"/proc/{pid}").stat().st_uid == service_uid, f"{name} is not aipool's"


def test_prometheus_scrapes_every_daemon(site: Site) -> None:
    """Debian's Prometheus, as its own user, with the rendered configuration: every target of
    the inventory up, the rules loaded, the node agents' and the policy daemon's figures in."""
    pid = int((PREFIX / "run/aipool-services/prometheus.pid").read_text())
    assert daemons.alive(pid, "prometheus")
    assert Path(f"/proc/{pid}").stat().st_uid == pwd.getpwnam("prometheus").pw_uid
    api = f"http://127.0.0.1:{PROMETHEUS}/api/v1"

    def targets() -> dict[str, str]:
        data = httpx.get(f"{api}/targets", timeout=10).json()["data"]["activeTargets"]
        return {t["scrapeUrl"]: t["health"] for t in data}

    wanted = {
        f"http://127.0.0.1:{POLICY_METRICS}/metrics",
        f"http://127.0.0.1:{AGENT_METRICS}/metrics",
        f"http://127.0.0.1:{AGENT_METRICS + 1}/metrics",
        f"http://127.0.0.1:{PORTAL}/metrics",
    }
    wait_until(lambda: targets() == dict.fromkeys(wanted, "up"), 60)
    groups = httpx.get(f"{api}/rules", timeout=10).json()["data"]["groups"]
    assert {g["name"] for g in groups} == {"aipool-recording", "aipool-alerts"}

    def series(query: str) -> list[dict[str, object]]:
        found = httpx.get(f"{api}/query", params={"query": query}, timeout=10).json()
        return list(found["data"]["result"])

    wait_until(lambda: len(series("aipool_node_cpus")) == len(NODES), 30)
    # the policy daemon's first cycle has read the two nodes' cards
    wait_until(lambda: len(series('aipool_node_cards{state="free", kind="gpu"}')) == 2, 60)
    token = (PREFIX / "etc/prometheus/aipool-portal.token").stat()
    assert token.st_uid == 0
    assert stat.S_IMODE(token.st_mode) == 0o640


def test_the_root_helper_is_roots_and_only_aipool_may_run_it(site: Site) -> None:
    helper = PREFIX / "usr/local/libexec/aipool-helper"
    for path in (helper, helper.with_name("aipool-helper.json")):
        st = path.stat()
        assert st.st_uid == 0, path
        assert not st.st_mode & 0o022, path
    rule = (PREFIX / "etc/sudoers.d/aipool").read_text()
    assert rule == f"Defaults!{helper} !use_pty\naipool ALL=(root) NOPASSWD: {helper}\n"
    config = json.loads(helper.with_name("aipool-helper.json").read_text())
    assert config["agent"][1:] == ["-I", "-m", "asuser.agent"]
    assert str(PREFIX / "var/lib/aipool/portal/datasets") in config["agent_roots"]
    env = (PREFIX / "etc/aipool/portal.env").read_text()
    assert f"AIPOOL_ROOT_HELPER=sudo -n {helper}\n" in env
    # the helper as installed makes a user's directory where the portal keeps them
    users = PREFIX / "var/lib/aipool/portal/users"
    done = subprocess.run(
        [str(helper), "user-dir", str(users), "alice"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    st = (users / "alice").stat()
    assert st.st_uid == pwd.getpwnam("alice").pw_uid
    assert stat.S_IMODE(st.st_mode) == 0o2750


def test_runtime_serves_users_who_are_not_root(site: Site) -> None:
    """What jobs and users run comes from the runtime, which nobody can use and none change."""
    done = as_nobody([str(RUNTIME / "bin/python"), "-c", "import jupyterlab, aipool, jobspec"])
    assert done.returncode == 0, done.stderr
    assert os.readlink(CLI) == str(RUNTIME / "bin/aipool")
    done = as_nobody([str(CLI), "--help"])
    assert done.returncode == 0, done.stderr
    assert {"submit", "jobs", "job", "cancel", "template"} <= set(done.stdout.split())
    # a login shell's profile names the runtime and this site's slurm.conf: `aipool jobs`
    # reaches the cluster as that user
    done = as_nobody(["bash", "-c", '. "$1" && aipool jobs --all', "-", str(PROFILE)])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "JOBID" in done.stdout
    unsafe = []
    for root, dirs, files in os.walk(RUNTIME):
        for name in (*dirs, *files):
            st = (Path(root) / name).lstat()
            if stat.S_ISLNK(st.st_mode):
                continue
            if st.st_uid != 0 or st.st_mode & 0o022 or not st.st_mode & stat.S_IROTH:
                unsafe.append(f"{root}/{name} {stat.filemode(st.st_mode)} uid={st.st_uid}")
    assert not unsafe, unsafe[:20]
    env = (PREFIX / "etc/aipool/portal.env").read_text()
    assert f"AIPOOL_JOB_RUNTIME={RUNTIME}\n" in env


def test_retention_at_least_180_days(site: Site) -> None:
    dbd = (PREFIX / "etc/slurm/slurmdbd.conf").read_text()
    purges = dict(re.findall(r"^(Purge\w+After)=(\d+)days$", dbd, re.MULTILINE))
    expected = {"Event", "Job", "Resv", "Step", "Suspend", "TXN", "Usage"}
    assert set(purges) == {f"Purge{k}After" for k in expected}
    assert min(int(v) for v in purges.values()) >= 180
    rotate = (PREFIX / "etc/logrotate.d/aipool").read_text()
    assert int(re.search(r"^\s+rotate (\d+)$", rotate, re.MULTILINE)[1]) >= 180  # type: ignore[index]
    assert "daily" in rotate


def test_units_rendered_and_verified(site: Site) -> None:
    units = sorted((PREFIX / "etc/systemd/system").glob("*.service"))
    names = {u.stem for u in units}
    assert names >= {"munge", "slurm-mariadb", "slurmdbd", "slurmctld", "slurmrestd"}
    assert names >= {"slurmd-node1", "slurmd-node2", "aipool-policy", "aipool-portal"}
    assert "aipool-reconciler" in names
    assert "prometheus" in names
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        log.warning("systemd-analyze is not installed: unit files rendered but not verified")
        assert "not verified" in site.first.output
        return
    done = subprocess.run(
        [analyze, "verify", *map(str, units)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_second_run_changes_nothing(site: Site) -> None:
    second = playbook(site.inventory, site.work / "second.log")
    log.warning("second run: %.1f s, changed=%d", second.seconds, second.changed)
    changed = [ln for ln in second.output.splitlines() if ln.startswith("changed:")]
    assert second.failed == 0
    assert second.changed == 0, "\n".join(changed) + second.output[-4000:]
    # and the cluster still works after it
    assert all(n.state is NodeState.IDLE for n in slurm().nodes())
