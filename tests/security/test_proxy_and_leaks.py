"""A hostile tenant against the portal's proxies, its trust in forwarded headers, and what the
lab leaves readable, on the live lab as the demo's Unix users.

- bob points the Jupyter proxy at every service listening on this host: from a job of his
  labelled ``aipool:jupyter=1`` with plain ``sbatch``, and from a Jupyter job the portal
  started for him, rewriting its connection file while the portal reads it. No answer of any
  other service may come back, nor a 500.
- a spoofed ``X-Forwarded-For`` is not the client's address: not for the sign-in limit, not
  for an inference service's IP allow-list; a spoofed ``X-Forwarded-Proto`` is not HTTPS.
- after jobs ran, no file under the lab's root that anyone may read holds a tenant's data,
  and no ``/metrics`` with tenant labels answers without the scrape token.

Every attempt is counted; a leak is an answer that was not the portal's own refusal, or that
showed something of another service or tenant. Leaks must be 0.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from aipool.lab import metrics as lab_metrics
from aipool.lab.config import LabPorts
from slurm_plugins.client.models import JobState
from tests.journeys.conftest import Site, import_preset, wait_for
from tests.security.ledger import Ledger
from tests.security.test_hostile_tenant import _web

pytestmark = pytest.mark.slurm

TRIES = 24  # requests per job while the connection file is being rewritten (>= 20)
#: what answers from the proxy may be: the portal's own refusals (not a Jupyter job of the
#: portal's; its server not running, not answering)
REFUSALS = {409, 502, 503}


# ---------------------------------------------------------------------- the host's services
def listening_ports() -> set[int]:
    """Every TCP port something listens on, on this host (all of /proc/net/tcp{,6})."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


#: the lab's PROXY_PORT_RANGE (the default): where jobs' own servers listen, not services
JOB_PORTS = range(50000, 60000)


def targets(site: Site) -> dict[int, str]:
    """Every local service: each port of this lab and of the default lab, the portal, ssh,
    MariaDB, and whatever else listens here, but jobs' own servers (Jupyter, replicas) on
    ports of the range, which a job of bob's on the node reaches without the portal anyway."""
    out: dict[int, str] = {}
    inventory = site.lab.inventory().nodes
    for label, ports in (("lab", site.lab.cfg.ports), ("default lab", LabPorts())):
        for name in ports.__dataclass_fields__:
            out.setdefault(getattr(ports, name), f"{label} {name}")
        for i, node in enumerate(inventory):
            out.setdefault(ports.slurmd_base + i, f"{label} slurmd {node.name}")
            out.setdefault(ports.agent_metrics_base + i, f"{label} agent {node.name}")
    out.setdefault(urlsplit(site.url).port or 80, "portal")
    for port, name in ((22, "ssh"), (3306, "mysql"), (9090, "prometheus"), (80, "http")):
        out.setdefault(port, name)
    for port in listening_ports():
        out.setdefault(port, "listening")
    return {port: name for port, name in out.items() if port not in JOB_PORTS}


def fingerprints(ports: dict[int, str], path: str, skip: int) -> dict[int, str]:
    """What each service answers when asked directly (as the proxy would ask it): a piece
    of its answer to look for in what the proxy returns; the portal itself (``skip``) is
    judged by the status whitelist instead."""
    found = {}
    for port in ports:
        if port == skip:
            continue
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
                s.settimeout(1)
                data = s.recv(4096)
        except OSError:
            continue
        head, _, body = data.partition(b"\r\n\r\n")
        piece = (body or head).strip()[:48]
        if len(piece) >= 8:
            found[port] = piece.decode("latin-1")
    return found


MARKERS = ("SSH-2.0", "# HELP", "# TYPE", "mysql_native_password", "slurm_jwt", "openapi")


def _leaked(
    ledger: Ledger, what: str, r: httpx.Response, prints: dict[int, str], ok: set[int]
) -> None:
    ledger.attempts.append(what)
    text = r.text
    if r.status_code not in ok:
        ledger.leaks.append(f"{what}: {r.status_code} {text[:120]!r}")
        return
    for port, piece in prints.items():
        if piece in text:
            ledger.leaks.append(f"{what}: the answer of port {port}: {piece!r}")
    for marker in MARKERS:
        if marker in text:
            ledger.leaks.append(f"{what}: {marker!r} in the answer")


# ---------------------------------------------------------------------- bob's files
RACER = """
import json, os, sys, time
path, job, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
ports = [int(p) for p in sys.argv[4:]]
hosts = ["127.0.0.1", "localhost", "0.0.0.0", "::1"]
end, i = time.monotonic() + seconds, 0
while time.monotonic() < end:
    port, host = ports[i % len(ports)], hosts[i % len(hosts)]
    i += 1
    conn = {"job_id": job, "app": "lab", "host": host, "port": port, "token": "t",
            "base_url": f"/jupyter/{job}/", "url": f"http://{host}:{port}/jupyter/{job}/"}
    tmp = f"{path}.{os.getpid()}.{i % 3}"
    with open(tmp, "w") as f:
        json.dump(conn, f)
    os.chmod(tmp, 0o640 if "/portal/" in path else 0o644)
    os.replace(tmp, path)
    time.sleep(0.002)
"""


@dataclass
class Racer:
    """bob rewriting a connection file in a loop, in his own process, until stopped."""

    proc: subprocess.Popen[bytes]

    @classmethod
    def start(cls, site: Site, path: Path, job_id: int, ports: list[int], seconds: float) -> Racer:
        argv = ["runuser", "-u", "bob", "--", "python3", "-c", RACER, str(path), str(job_id)]
        proc = subprocess.Popen([*argv, str(seconds), *map(str, ports)], stderr=subprocess.DEVNULL)
        return cls(proc)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def write_as_bob(site: Site, path: Path, conn: dict[str, object]) -> None:
    code = (
        "import json, os, sys; p = sys.argv[1]; t = p + '.w'; "
        "open(t, 'w').write(sys.argv[2]); os.chmod(t, int(sys.argv[3], 8)); os.replace(t, p)"
    )
    mode = "640" if "/portal/" in str(path) else "644"
    done = site.shell("bob", "python3", "-c", code, str(path), json.dumps(conn), mode)
    assert done.returncode == 0, done.stderr


def _running(site: Site, job_id: int) -> bool:
    job = site.client.job(job_id)
    if job is not None and job.state.is_finished:
        raise AssertionError(f"job {job_id} ended: {job.state}")
    return job is not None and job.state is JobState.RUNNING


def _xsrf(client: httpx.Client, job_id: int) -> dict[str, str]:
    client.cookies.set("_xsrf", "x", path=f"/jupyter/{job_id}/")
    return {"X-XSRFToken": "x", "Content-Type": "application/json"}


def _attack(
    site: Site,
    ledger: Ledger,
    bob: httpx.Client,
    job_id: int,
    conn_file: Path,
    *,
    label: str,
    ok: set[int],
) -> None:
    """Point the file at each service in turn, then race rewrites against the proxy."""
    services = targets(site)
    portal_port = urlsplit(site.url).port or 80
    path = f"/jupyter/{job_id}/api/status"
    prints = fingerprints(services, path, portal_port)
    headers = _xsrf(bob, job_id)
    for port, name in sorted(services.items()):
        conn = {"job_id": job_id, "app": "lab", "host": "127.0.0.1", "port": port,
                "token": "t", "base_url": f"/jupyter/{job_id}/",
                "url": f"http://127.0.0.1:{port}/jupyter/{job_id}/"}  # fmt: skip
        write_as_bob(site, conn_file, conn)
        r = bob.get(path, headers={"Accept": "application/json"})
        _leaked(ledger, f"{label}: GET to {name} ({port})", r, prints, ok)
        r = bob.post(f"/jupyter/{job_id}/api/kernels", content=b'{"x": 1}', headers=headers)
        _leaked(ledger, f"{label}: POST to {name} ({port})", r, prints, ok)
    racer = Racer.start(site, conn_file, job_id, sorted(services), 60)
    try:
        for i in range(TRIES):
            r = bob.get(path, headers={"Accept": "application/json"})
            _leaked(ledger, f"{label}: GET while the file is rewritten #{i}", r, prints, ok)
            r = bob.put(f"/jupyter/{job_id}/api/contents/x", content=b"{}", headers=headers)
            _leaked(ledger, f"{label}: PUT while the file is rewritten #{i}", r, prints, ok)
            time.sleep(0.3)  # past the proxy's cache of a checked connection, in turn
    finally:
        racer.stop()


def test_a_job_only_labelled_jupyter_reaches_no_local_service(site: Site, ledger: Ledger) -> None:
    """bob's ``sbatch --comment=aipool:jupyter=1``: its connection file, his to write and
    the portal's to read, names each service on this host in turn, then races."""
    workdir = site.lab.cfg.jobs / f"px-bob-{secrets.token_hex(4)}"
    assert site.shell("bob", "mkdir", "-m", "755", str(workdir)).returncode == 0
    done = site.shell(
        "bob", "sbatch", "--parsable", "--comment=aipool:jupyter=1", "-p", "cpu", "-t", "10",
        "-c", "1", "-J", "px-labelled", "-o", f"{workdir}/slurm-%j.out", "-D", str(workdir),
        "--wrap", "sleep 600",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    job_id = int(done.stdout.strip().split(";")[0])
    bob = _web(site, "bob")
    try:
        wait_for(lambda: _running(site, job_id), 120, f"bob's job {job_id} running")
        conn_file = workdir / f"jupyter-{job_id}.json"
        _attack(site, ledger, bob, job_id, conn_file, label="labelled job", ok={409})
        api = site.api("bob").get(f"/jobs/{job_id}/jupyter")
        ledger.attempts.append("labelled job: the API's Jupyter address")
        if api.status_code != 409:
            ledger.leaks.append(f"labelled job: API answered {api.status_code} {api.text[:120]}")
    finally:
        site.shell("bob", "scancel", str(job_id))
        bob.close()
    assert len(ledger.attempts) >= 2 * TRIES
    assert ledger.leaks == []


def test_a_portal_jupyter_job_rewritten_reaches_no_local_service(
    site: Site, ledger: Ledger
) -> None:
    """bob's Jupyter job as the portal starts it: once its server answers through the proxy
    (the control), he rewrites its connection file to each service, then races."""
    api = site.api("bob")
    projects = {p["name"]: p["id"] for p in api.get("/projects").json()}
    spec = {"name": "px-notebook", "jupyter": {"app": "lab"}, "partition": "cpu",
            "resources": {"cpus": 1, "time": 10}}  # fmt: skip
    r = api.post("/jobs/spec", json={"project_id": projects["vision"], "spec": spec})
    assert r.status_code == 201, r.text
    job_id = int(r.json()["job_id"])
    bob = _web(site, "bob")
    try:
        wait_for(lambda: _running(site, job_id), 120, f"bob's Jupyter job {job_id} running")
        ready = wait_for(
            lambda: (c := api.get(f"/jobs/{job_id}/jupyter").json()).get("ready") and c,
            120,
            "its connection file",
        )
        assert ready["port"] in JOB_PORTS, ready  # the template chose a port of the range
        assert ready["host"] == site.lab.cfg.address  # Slurm's NodeAddr of the lab's nodes
        status = wait_for(
            lambda: (s := bob.get(f"/jupyter/{job_id}/api/status")).status_code == 200 and s,
            120,
            "JupyterLab through the proxy",
        )
        assert "last_activity" in status.json()  # the control: Jupyter's own answer
        job = site.client.job(job_id)
        assert job is not None
        conn_file = Path(job.stdout_file).parent / f"jupyter-{job_id}.json"
        time.sleep(11)  # past the proxy's cache of the real connection
        _attack(site, ledger, bob, job_id, conn_file, label="portal Jupyter job", ok=REFUSALS)
    finally:
        api.delete(f"/jobs/{job_id}")
        bob.close()
    assert ledger.leaks == []


# ---------------------------------------------------------------------- forwarded headers
def test_a_spoofed_forwarded_proto_is_not_https(site: Site, ledger: Ledger) -> None:
    r = httpx.get(f"{site.url}/login", headers={"X-Forwarded-Proto": "https"}, timeout=10)
    cookie = r.headers.get("set-cookie", "")
    assert "session=" in cookie  # the control: the page sets the session cookie
    ledger.attempts.append("X-Forwarded-Proto: https on the sign-in page")
    if "secure" in cookie.lower():
        ledger.leaks.append("a spoofed X-Forwarded-Proto made the session cookie Secure")
    assert ledger.leaks == []


def test_a_spoofed_forwarded_for_passes_no_allow_list(site: Site, ledger: Ledger) -> None:
    """An inference service open to 10.9.9.9 only: a call from here saying it comes from
    10.9.9.9 is refused; one open to 127.0.0.1 lets the same call past the list (the
    control: the list reads the connection's address)."""
    alice = site.api("alice")
    model_id = import_preset(alice, "nlp")
    services = []
    try:
        version = wait_for(
            lambda: next(
                (v for v in alice.get(f"/models/{model_id}/versions").json()
                 if v["status"] == "ready"), None,
            ),
            120,
            "a ready version",
        )  # fmt: skip
        for allow in (["10.9.9.9"], ["127.0.0.1"]):
            body = {"version_id": version["id"], "allow_ips": allow,
                    "name": f"px-allow-{secrets.token_hex(3)}"}  # fmt: skip
            r = alice.post("/inference", json=body)
            assert r.status_code == 201, r.text
            services.append(r.json())
        spoofed = {"X-Forwarded-For": "10.9.9.9", "X-Real-IP": "10.9.9.9"}
        closed, open_ = services
        for i in range(TRIES):
            r = httpx.post(
                f"{site.url}{closed['url']}",
                json={"pixels": [0] * 64},
                headers={"X-Service-Token": closed["token"], **spoofed},
                timeout=30,
            )
            ledger.attempts.append(f"inference allow-list with X-Forwarded-For #{i}")
            if r.status_code != 403:
                ledger.leaks.append(f"allow-list passed with a spoofed address: {r.status_code}")
        r = httpx.post(
            f"{site.url}{open_['url']}",
            json={"pixels": [0] * 64},
            headers={"X-Service-Token": open_["token"], **spoofed},
            timeout=30,
        )
        assert r.status_code != 403, r.text  # the control: 127.0.0.1 is on its list
    finally:
        for svc in services:
            alice.delete(f"/inference/{svc['id']}")
        wait_for(lambda: alice.delete(f"/models/{model_id}").status_code != 409, 120, "model gone")
    assert ledger.leaks == []


# ---------------------------------------------------------------------- what anyone reads
def _reachable_by_all(path: Path) -> bool:
    """Whether a user who is neither the owner nor in the group may open ``path``: every
    directory on the way searchable by others, the file readable by others."""
    try:
        st = path.lstat()
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or not st.st_mode & stat.S_IROTH:
        return False
    for parent in path.parents:
        try:
            if not parent.stat().st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


def test_no_file_anyone_may_read_holds_a_tenants_data(site: Site, ledger: Ledger) -> None:
    """After jobs of bob's (plain sbatch in the lab's shared job directory, as the lab's
    users submit) and alice's (through the portal) printed a secret, nothing under the lab's
    root that anyone may read holds it, nor any log, the daemons' state or a job's output."""
    marker = f"TENANT-SECRET-{secrets.token_hex(8)}"
    workdir = site.lab.cfg.jobs
    done = site.shell(
        "bob", "sbatch", "--parsable", "-p", "cpu", "-t", "5", "-c", "1", "-J", "px-secret",
        "-o", f"{workdir}/px-%j.out", "-D", str(workdir), "--wrap", f"echo {marker}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    plain = int(done.stdout.strip().split(";")[0])
    projects = {p["name"]: p["id"] for p in site.api("alice").get("/projects").json()}
    body = {"project_id": projects["nlp"], "name": "px-secret", "partition": "cpu", "cpus": 1,
            "time_limit": 5, "script": f"#!/bin/bash\necho {marker}\n"}  # fmt: skip
    r = site.api("alice").post("/jobs", json=body)
    assert r.status_code == 201, r.text
    portal_job = int(r.json()["job_id"])
    for job_id in (plain, portal_job):
        wait_for(lambda j=job_id: _finished(site, j), 120, f"job {job_id} finished")
    out = workdir / f"px-{plain}.out"
    assert marker in out.read_text()  # the control: the secret is there, for bob
    assert marker in site.shell("bob", "cat", str(out)).stdout
    cfg = site.lab.cfg
    private = (cfg.log, cfg.state, cfg.spool, cfg.root / "policy", cfg.jobs, cfg.root / "portal")
    tenants = ("alice", "bob", "carol", "dave", "vision", "nlp")
    for path in sorted(p for p in cfg.root.rglob("*") if _reachable_by_all(p)):
        ledger.attempts.append(f"read {path}")
        try:
            text = path.read_bytes()[: 4 * 2**20].decode("utf-8", "replace")
        except OSError:
            continue
        if marker in text:
            ledger.leaks.append(f"{path}: anyone reads a job's secret")
        elif any(path.is_relative_to(d) for d in private) and any(t in text for t in tenants):
            ledger.leaks.append(
                f"{path}: anyone reads tenants' data (mode {path.stat().st_mode:o})"
            )
    ledger.attempts.append("bob reads the policy daemon's reasons")
    reasons = cfg.root / "policy" / "reasons.json"
    if reasons.exists() and site.shell("bob", "cat", str(reasons)).returncode == 0:
        ledger.leaks.append("bob reads reasons.json")
    assert ledger.leaks == []


def _finished(site: Site, job_id: int) -> bool:
    job = site.client.job(job_id)
    return job is not None and job.state not in (JobState.PENDING, JobState.RUNNING)


def test_no_metrics_with_tenant_labels_without_the_token(site: Site, ledger: Ledger) -> None:
    """Every /metrics of the lab's scrape configuration, asked without the token (and with a
    wrong one), answers nothing; with the token Prometheus's own way, it answers (the
    control)."""
    cfg = site.lab.cfg
    token = lab_metrics.token_file(cfg).read_text().strip()
    jobs = lab_metrics.endpoints(cfg).get("jobs", {})
    assert jobs, "no scrape configuration: run `aipool lab services up`"
    answered = 0
    for job, addresses in jobs.items():
        for address in addresses:
            url = f"http://{address}/metrics"
            try:
                good = httpx.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=5)
            except httpx.HTTPError:
                continue  # not running in this lab (the daemons run in the default lab only)
            answered += good.status_code == 200
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"X-Forwarded-For": "10.0.0.1"}):
                r = httpx.get(url, headers=headers, timeout=5)
                ledger.attempts.append(f"{job} {url} {headers}")
                if r.status_code == 200 or "aipool_" in r.text:
                    ledger.leaks.append(f"{job} {url} answered {r.status_code} with {headers}")
    assert answered >= 2  # the control: at least the portal and the accounting import
    assert ledger.leaks == []


def test_a_spoofed_forwarded_for_escapes_no_sign_in_limit(site: Site, ledger: Ledger) -> None:
    """Last, as it spends this address's sign-ins for a minute: sign-ins of made-up users,
    each from a different address by its X-Forwarded-For, are limited as from one address."""
    refused = 0
    for i in range(TRIES):
        r = httpx.post(
            f"{site.url}/api/v1/auth/token",
            json={"username": f"nobody{secrets.token_hex(4)}", "password": "wrong-password"},
            headers={"X-Forwarded-For": f"10.{i}.{i}.{i}", "X-Real-IP": f"10.{i}.{i}.{i}"},
            timeout=10,
        )
        ledger.attempts.append(f"sign-in from 'another address' #{i}")
        refused += r.status_code == 429
    limit = int(os.environ.get("AIPOOL_LOGIN_RATE_LIMIT", "10 per minute").split()[0])
    if refused < TRIES - limit:
        ledger.leaks.append(f"only {refused} of {TRIES} sign-ins limited: the header was believed")
    time.sleep(61)  # the window passes: the portal signs this address in again
    assert ledger.leaks == []
