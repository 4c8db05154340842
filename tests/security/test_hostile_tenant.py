"""A hostile tenant on the lab the README's first command leaves running: bob (project vision)
goes after alice's (project nlp) work from his own Unix shell, from a Slurm job of his, and
through the portal with links planted in his own job's files. Every attempt is counted; a
leak is an attempt that showed him something of alice's or of the portal's. Leaks must be 0.

What is attacked here: the portal's per-user job directories and its home (database, model
work), the slurmrestd JWT key, Slurm's records (``PrivateData``), and the files the portal
reads back from a job (symbolic links at the file and on its way, hard links).
"""

from __future__ import annotations

import grp
import pwd
import re
import secrets
import shlex
import stat
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from slurm_plugins.client.models import JobState
from tests.journeys.conftest import Site, wait_for
from tests.security.ledger import Ledger

pytestmark = pytest.mark.slurm

CSRF = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"|value="([^"]+)" name="csrf')


def _finished(site: Site, job_id: int) -> bool:
    job = site.client.job(job_id)
    return job is not None and job.state not in (JobState.PENDING, JobState.RUNNING)


def _submit(site: Site, user: str, project: str, name: str, script: str) -> int:
    projects = {p["name"]: p["id"] for p in site.api(user).get("/projects").json()}
    body = {
        "project_id": projects[project], "name": name, "partition": "cpu", "cpus": 1,
        "time_limit": 5, "script": script,
    }  # fmt: skip
    r = site.api(user).post("/jobs", json=body)
    assert r.status_code == 201, r.text
    job_id = int(r.json()["job_id"])
    wait_for(lambda: _finished(site, job_id), 120, f"{user}'s job {job_id} finished")
    return job_id


@dataclass(frozen=True)
class Victim:
    marker: str  # what alice's job printed and wrote: must never reach bob
    job_id: int
    output: Path
    workdir: Path


@pytest.fixture(scope="module")
def victim(site: Site) -> Victim:
    marker = f"ALICE-SECRET-{secrets.token_hex(8)}"
    script = f"#!/bin/bash\necho {marker}\necho {marker} > notes.txt\n"
    job_id = _submit(site, "alice", "nlp", "private-work", script)
    job = site.client.job(job_id)
    assert job is not None
    assert job.stdout_file
    output = Path(job.stdout_file)
    # positive controls: the secret is there, and alice herself reads it everywhere bob tries
    assert marker in output.read_text()
    assert marker in site.shell("alice", "cat", str(output)).stdout
    assert marker in site.shell("alice", "cat", str(output.parent / "notes.txt")).stdout
    alice = _web(site, "alice")
    try:
        assert marker in alice.get(f"/jobs/{job_id}").text
    finally:
        alice.close()
    return Victim(marker, job_id, output, output.parent)


def _portal_secrets(site: Site) -> list[str]:
    """Text that only the portal and Slurm may read: the key, a password hash of alice's."""
    key = site.lab.cfg.jwt_key.read_bytes()
    db = (site.lab.cfg.root / "portal" / "portal.db").read_bytes()
    hashes = re.findall(rb"\$argon2id\$[^\x00]{20,120}", db)
    assert hashes, "the portal's database holds no password hash"
    return [key.hex(), hashes[0].decode(errors="replace")[:60]]


def test_bob_reads_nothing_of_alices_from_his_shell(
    site: Site,
    victim: Victim,
    ledger: Ledger,
) -> None:
    home = site.lab.cfg.root / "portal"
    tries = {
        "cat alice's job output": ["cat", str(victim.output)],
        "cat alice's job's own file": ["cat", str(victim.workdir / "notes.txt")],
        "list alice's job directory": ["ls", "-la", str(victim.workdir)],
        "list everyone's job directories": ["ls", "-la", str(victim.workdir.parent)],
        "find alice's files": ["find", str(home), "-name", "*.out"],
        "grep the portal's home": ["grep", "-r", victim.marker, str(home)],
        "list the model work": ["ls", "-laR", str(home / "model-work")],
    }
    for what, argv in tries.items():
        done = site.shell("bob", *argv)
        ledger.attempt(f"shell: {what}", done.stdout, victim.marker, "alice")
    key_hex, pw_hash = _portal_secrets(site)
    for what, argv in {
        "read the portal's database": ["cat", str(home / "portal.db")],
        "read the slurmrestd JWT key": ["od", "-An", "-v", "-tx1", str(site.lab.cfg.jwt_key)],
    }.items():
        done = site.shell("bob", *argv)
        shown = re.sub(r"\s", "", done.stdout) if argv[0] == "od" else done.stdout
        ledger.attempt(f"shell: {what}", shown, key_hex, pw_hash)
    assert ledger.leaks == []


def test_slurm_hides_alices_jobs_usage_and_associations_from_bob(
    site: Site,
    victim: Victim,
    ledger: Ledger,
) -> None:
    tries = {
        "squeue -a": ["squeue", "-a", "-h", "-o", "%i %u %a %j %Z"],
        "sacct -a": ["sacct", "-a", "-X", "-n", "-P", "-o", "jobid,user,account,jobname,workdir"],
        "sacct -j alice's job": ["sacct", "-j", str(victim.job_id), "-n", "-P", "-o", "user"],
        "scontrol show job": ["scontrol", "show", "job", str(victim.job_id)],
        "sacctmgr show assoc": ["sacctmgr", "-n", "-P", "show", "assoc", "format=account,user"],
        "sacctmgr show user": ["sacctmgr", "-n", "-P", "show", "user"],
        "sreport": ["sreport", "-n", "-P", "cluster", "AccountUtilizationByUser", "start=now-1day"],
    }
    for what, argv in tries.items():
        done = site.shell("bob", *argv)
        ledger.attempt(f"slurm: {what}", done.stdout, "alice", "private-work", str(victim.workdir))
    mine = site.shell("alice", "sacct", "-j", str(victim.job_id), "-n", "-P", "-o", "user")
    assert "alice" in mine.stdout  # alice still sees her own job
    assert ledger.leaks == []


def test_bobs_job_reads_nothing_of_alices(
    site: Site,
    victim: Victim,
    ledger: Ledger,
) -> None:
    home = site.lab.cfg.root / "portal"
    targets = [
        victim.output,
        victim.workdir / "notes.txt",
        home / "portal.db",
        site.lab.cfg.jwt_key,
    ]
    dump = "2>&1 | head -c 4096 | od -An -v -tx1 | tr -d ' \\n'; echo"
    lines = [f"cat {shlex.quote(str(t))} {dump}" for t in targets]
    lines.append(f"ls -la {shlex.quote(str(victim.workdir))} 2>&1")
    job_id = _submit(site, "bob", "vision", "snoop", "#!/bin/bash\n" + "\n".join(lines) + "\n")
    job = site.client.job(job_id)
    assert job is not None
    shown = Path(job.stdout_file).read_text()
    as_text = bytes.fromhex("".join(re.findall(r"^[0-9a-f]+$", shown, re.MULTILINE))).decode(
        errors="replace"
    )
    key_hex, pw_hash = _portal_secrets(site)
    ledger.attempt("job: read alice's files, the database and the key", shown + as_text,
                   victim.marker, key_hex, pw_hash)  # fmt: skip
    ledger.attempt("job: list alice's job directory", shown, "notes.txt")
    assert ledger.leaks == []


def _web(site: Site, user: str) -> httpx.Client:
    """A browser-like session of ``user``'s (the login form, with its CSRF token)."""
    client = httpx.Client(base_url=site.url, timeout=30, follow_redirects=True)
    page = client.get("/login").text
    m = CSRF.search(page)
    assert m, "no CSRF token on the login page"
    token = m.group(1) or m.group(2)
    r = client.post(
        "/login",
        data={"username": user, "password": site.passwords[user], "csrf_token": token},
    )
    assert r.status_code == 200, r.status_code
    assert "/login" not in str(r.url)
    return client


def test_links_in_bobs_own_job_files_show_him_nothing_through_the_portal(
    site: Site,
    victim: Victim,
    ledger: Ledger,
) -> None:
    job_id = _submit(site, "bob", "vision", "planted", "#!/bin/bash\necho mine\n")
    job = site.client.job(job_id)
    assert job is not None
    out = Path(job.stdout_file)
    mine = out.parent
    assert mine.name == "bob"
    assert site.shell("bob", "test", "-O", str(out)).returncode == 0
    key_hex, pw_hash = _portal_secrets(site)
    shadow = Path("/etc/shadow").read_text().splitlines()[0]  # root's line
    secrets_ = (victim.marker, key_hex, pw_hash, shadow)
    bob = _web(site, "bob")
    assert "mine" in bob.get(f"/jobs/{job_id}").text  # control: he sees his own output
    plants = {
        "a link to alice's output": ["ln", "-sfn", str(victim.output), str(out)],
        "a link to the JWT key": ["ln", "-sfn", str(site.lab.cfg.jwt_key), str(out)],
        "a link to /etc/shadow": ["ln", "-sfn", "/etc/shadow", str(out)],
        "a hard link to the portal's database": [
            "ln", "-f", str(site.lab.cfg.root / "portal" / "portal.db"), str(out),
        ],
    }  # fmt: skip
    for what, argv in plants.items():
        site.shell("bob", "rm", "-f", str(out))
        site.shell("bob", *argv)
        time.sleep(0.2)
        page = bob.get(f"/jobs/{job_id}").text
        ledger.attempt(f"portal: job page with {what}", page, *secrets_)
    # his own directory cannot be swapped for a link: its parent is root's
    moved = site.shell("bob", "mv", str(mine), str(mine) + ".moved")
    ledger.attempt("shell: move his job directory aside", moved.stdout, "renamed")
    assert moved.returncode != 0
    api = site.api("bob")
    for what, path in {
        "alice's job": f"/jobs/{victim.job_id}",
        "alice's job metrics": f"/jobs/{victim.job_id}/metrics",
        "alice's job's Jupyter": f"/jobs/{victim.job_id}/jupyter",
    }.items():
        r = api.get(path)
        ledger.attempt(f"api: {what}", r.text, victim.marker, str(victim.workdir))
        assert r.status_code == 404, (what, r.status_code)
    theirs = bob.get(f"/jobs/{victim.job_id}")
    ledger.attempt("portal: alice's job page", theirs.text, victim.marker, "private-work")
    bob.close()
    assert ledger.attempts
    assert ledger.leaks == []


def test_alices_private_dataset_is_closed_to_bob_everywhere(
    site: Site,
    ledger: Ledger,
) -> None:
    marker = f"ALICE-DATA-{secrets.token_hex(8)}"
    alice = site.api("alice")
    projects = {p["name"]: p["id"] for p in alice.get("/projects").json()}
    body = {
        "project_id": projects["nlp"],
        "name": f"private-{marker[-6:]}",
        "visibility": "private",
    }
    r = alice.post("/datasets", json=body)
    assert r.status_code == 201, r.text
    ds = r.json()["id"]
    try:
        hidden = f"hidden-{secrets.token_hex(6)}.txt"  # a name bob cannot know but by listing
        files = [("files", ("notes.txt", f"{marker}\n".encode())), ("files", (hidden, b"x"))]
        version = alice.post(f"/datasets/{ds}/upload", files=files)
        assert version.status_code == 201, version.text
        path = Path(version.json()["path"])
        note = path / "notes.txt"
        assert marker in site.shell("alice", "cat", str(note)).stdout  # control: hers to read
        for what, argv in {
            "cat alice's private dataset": ["cat", str(note)],
            "list it": ["ls", "-la", str(path)],
            "list the dataset store": ["ls", "-la", str(path.parent.parent)],
        }.items():
            done = site.shell("bob", *argv)
            ledger.attempt(f"shell: {what}", done.stdout, marker, hidden)
        script = f"#!/bin/bash\ncat {shlex.quote(str(note))}\nls {shlex.quote(str(path))}\n"
        job_id = _submit(site, "bob", "vision", "data-snoop", script)
        job = site.client.job(job_id)
        assert job is not None
        shown = Path(job.stdout_file).read_text()
        ledger.attempt("job: read alice's private dataset", shown, marker, hidden)
        spec = {"name": "mount-snoop", "command": ["cat", str(note)],
                "mounts": [{"name": "theirs", "path": str(path)}]}  # fmt: skip
        bob = site.api("bob")
        vision = {p["name"]: p["id"] for p in bob.get("/projects").json()}["vision"]
        r = bob.post("/jobs/spec", json={"project_id": vision, "spec": spec})
        ledger.attempt("api: a job mounting alice's version", r.text, marker)
        assert r.status_code == 422, r.text
        for what, url in {"the dataset": f"/datasets/{ds}",
                          "its files": f"/datasets/{ds}/versions/1/files"}.items():  # fmt: skip
            got = bob.get(url)
            ledger.attempt(f"api: {what}", got.text, marker, hidden)
            assert got.status_code == 404, (url, got.status_code)
    finally:
        alice.delete(f"/datasets/{ds}")
    assert ledger.leaks == []


# ---------------------------------------------------------------- the services' own user
SLURM_SIDE = ("slurmctld", "slurmd", "slurmdbd", "slurmrestd", "slurmstepd", "munged", "mariadbd")


def _processes() -> list[tuple[int, int, str]]:
    """(pid, real uid, command line) of every process on this host."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            uid = int((proc / "status").read_text().split("\nUid:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        out.append((int(proc.name), uid, " ".join(a.decode(errors="replace") for a in argv)))
    return out


def test_no_aipool_service_runs_as_root(site: Site) -> None:
    """``ps`` in the lab: AIPool's services are the service user's; only Slurm's, munge's and
    MariaDB's own daemons (and this test's own processes) run as root."""
    services = [
        (pid, uid, cmd)
        for pid, uid, cmd in _processes()
        if "aipool.cli" in cmd and "pytest" not in cmd
    ]
    assert len(services) >= 5, services  # portal, policy daemon, import, reconciler, agents
    service_uid = pwd.getpwnam("aipool").pw_uid
    as_root = [cmd for _pid, uid, cmd in services if uid != service_uid]
    assert as_root == [], as_root
    for name in ("portal", "policy run", "accounting run", " reconcile ", "node agent"):
        assert any(name in cmd for _p, _u, cmd in services), f"no {name} is running"


def test_the_jwt_key_is_for_slurm_and_the_token_service_only(site: Site, ledger: Ledger) -> None:
    key = site.lab.cfg.jwt_key
    st = key.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o640)
    assert grp.getgrgid(st.st_gid).gr_name == "aipool-token"
    assert grp.getgrnam("aipool-token").gr_mem in ([], ["aipool-token"])  # nobody else in it
    assert site.shell("aipool-token", "test", "-r", str(key)).returncode == 0  # its reader
    assert site.shell("aipool", "test", "-r", str(key)).returncode != 0  # the portal asks it
    for user in ("alice", "bob", "carol", "dave"):
        done = site.shell(user, "od", "-An", "-v", "-tx1", str(key))
        ledger.attempt(f"shell: {user} reads the JWT key", re.sub(r"\s", "", done.stdout),
                       key.read_bytes().hex())  # fmt: skip
    assert ledger.leaks == []


def test_only_the_service_user_may_use_the_root_helper_and_only_as_meant(
    site: Site, ledger: Ledger
) -> None:
    helper = site.lab.cfg.root / "sbin" / "aipool-helper"
    users = site.lab.cfg.root / "portal" / "users"
    # bob may not run it through sudo, nor run it as himself to any effect
    done = site.shell("bob", "sudo", "-n", str(helper), "user-dir", str(users), "bob")
    ledger.attempt("shell: bob runs the root helper through sudo", done.stdout + done.stderr,
                   str(users / "bob"))  # fmt: skip
    assert done.returncode != 0
    done = site.shell("bob", str(helper), "user-dir", str(users), "bob")
    assert done.returncode == 2
    assert "must run as root" in done.stderr
    # the service user may, for what the helper is for, and nothing else
    refused = {
        "a directory for root": ["user-dir", str(users), "root"],
        "a directory outside its roots": ["user-dir", "/etc", "bob"],
        "a run named like a path": ["run-dir", str(users), "bob", "../../../etc"],
        "another verb": ["chown", "/etc/shadow", "bob"],
    }
    for what, args in refused.items():
        done = site.shell("aipool", "sudo", "-n", str(helper), *args)
        assert done.returncode != 0, (what, done.stdout)
    done = site.shell("aipool", "sudo", "-n", "/usr/bin/id")
    assert done.returncode != 0, "sudo lets aipool run more than the helper"
    audit = (site.lab.cfg.log / "helper-audit.log").read_text()
    assert '"argv": ["chown", "/etc/shadow", "bob"], "done": false' in audit


def test_a_tenant_cannot_touch_the_admission_table(site: Site) -> None:
    """The portal writes slurmctld's table (as data, in its own directory); tenants may not."""
    table = site.lab.cfg.admission / "aipool_policy.lua"
    for argv in (["touch", str(table)], ["mv", str(table), f"{table}.x"],
                 ["cp", "/etc/hostname", str(site.lab.cfg.admission / "x.lua")]):  # fmt: skip
        assert site.shell("bob", *argv).returncode != 0, argv
    hook = (site.lab.cfg.etc / "job_submit.lua").stat()
    assert hook.st_uid == 0
    assert not hook.st_mode & 0o022
