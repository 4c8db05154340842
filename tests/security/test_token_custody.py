"""Key custody on the live lab: a shell as the service user ``aipool`` (what a compromise of the
portal gives) goes after the slurmrestd JWT key and after Slurm identities beyond the portal's
own: root, SlurmUser, Slurm's operators, other users. Only the token service (``aipool-token``)
reads the key; it mints tokens for ordinary users only, for ``aipool`` only. Every attempt is
counted; a leak is an attempt that gave ``aipool`` the key or acted as root or as a user it
asked nobody for. Leaks must be 0.
"""

from __future__ import annotations

import grp
import json
import pwd
import re
import secrets
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import jwt
import pytest

from aipool.lab import host
from slurm_plugins.client import AuthenticationError, SlurmClient
from slurm_plugins.client.rest import RestClient, mint_token
from tests.journeys.conftest import Site, wait_for
from tests.security.ledger import Ledger

pytestmark = pytest.mark.slurm

#: asks the token service for each user named, all at once; prints [user, outcome, detail]
ASK = """
import json, sys
from concurrent.futures import ThreadPoolExecutor
from slurm_plugins.tokens import TokenClient, TokenError
sock, lifespan, users = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def ask(user):
    try:
        return [user, "minted", TokenClient(sock).token(user, lifespan).token]
    except TokenError as exc:
        return [user, "refused", exc.reason + " " + exc.detail]
with ThreadPoolExecutor(32) as pool:
    print(json.dumps(list(pool.map(ask, users))))
"""
#: reads what it can of process PID's memory, open files and environment; prints it as hex
PEEK = """
import os, sys
pid, got = sys.argv[1], b""
for name in ("environ", "mem", "stack"):
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            got += f.read(1 << 20)
    except OSError as exc:
        print(name, exc.strerror)
try:
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with open(f"/proc/{pid}/fd/{fd}", "rb") as f:
            got += f.read(1 << 20)
except OSError as exc:
    print("fd", exc.strerror)
print(got.hex())
print(f"read {len(got)} bytes")
"""
OPERATOR = "tokop"  # an ordinary Unix account that Slurm knows as an operator, for this test


def _socket(site: Site) -> Path:
    return host.token_socket(site.lab.cfg)


def _audit(site: Site) -> Path:
    return site.lab.cfg.log / host.TOKEN_USER / "audit.log"


def _audited(site: Site, since: int) -> list[dict[str, Any]]:
    """The mints and refusals audited after offset ``since`` (not the service's own events)."""
    with _audit(site).open("rb") as f:
        f.seek(since)
        records = [json.loads(line) for line in f.read().splitlines()]
    return [r for r in records if r["event"] in ("minted", "refused")]


def _ask(
    site: Site, users: list[str], lifespan: int = 30, *, prefix: tuple[str, ...] = ("aipool",)
) -> list[tuple[str, str, str]]:
    """Ask the service for ``users`` from a process made by ``prefix`` (a user for runuser,
    or a full ``setpriv`` argv)."""
    python = str(site.lab.cfg.runtime / "bin" / "python")
    argv = [python, "-I", "-c", ASK, str(_socket(site)), str(lifespan), *users]
    if prefix[0] == "setpriv":
        done = subprocess.run([*prefix, *argv], capture_output=True, text=True, timeout=120,
                              check=False, cwd="/")  # fmt: skip
    else:
        done = site.shell(prefix[0], *argv)
    assert done.returncode == 0, done.stderr
    return [tuple(r) for r in json.loads(done.stdout)]  # type: ignore[misc]


@pytest.fixture(scope="module")
def running(site: Site) -> Site:
    running = {n for n, d in site.lab.status()["daemons"].items() if d["running"]}
    if "token-service" not in running:
        pytest.fail("the token service is not running: run `aipool lab services up`")
    return site


def test_the_key_is_slurm_s_and_the_token_service_s_only(running: Site, ledger: Ledger) -> None:
    key = running.lab.cfg.jwt_key
    st = key.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o640)  # root is the lab's SlurmUser
    assert grp.getgrgid(st.st_gid).gr_name == host.TOKEN_USER
    assert grp.getgrnam(host.TOKEN_USER).gr_mem in ([], [host.TOKEN_USER])
    aipool = pwd.getpwnam("aipool")
    assert st.st_gid != aipool.pw_gid
    secret = key.read_bytes().hex()
    for user in ("aipool", "alice", "bob"):
        done = running.shell(user, "od", "-An", "-v", "-tx1", str(key))
        shown = re.sub(r"\s", "", done.stdout)
        ledger.check(f"shell: {user} reads the JWT key", secret in shown, shown)
        assert done.returncode != 0
    # nor through the token service's process: its memory, its open files, its environment
    pid = str(running.lab.ledger()["daemons"]["token-service"]["pid"])
    python = str(running.lab.cfg.runtime / "bin" / "python")
    done = running.shell("aipool", python, "-I", "-c", PEEK, pid)
    ledger.check("shell: aipool reads the token service's memory", secret in done.stdout,
                   done.stdout[-200:])  # fmt: skip
    assert "read 0 bytes" in done.stdout, done.stdout + done.stderr
    done = running.shell("aipool", "tee", "-a", str(_audit(running)))
    ledger.check("shell: aipool appends to the token audit", done.returncode == 0)
    assert ledger.leaks == []


def test_aipool_gets_no_token_for_privileged_or_unknown_accounts(
    running: Site, ledger: Ledger
) -> None:
    client = SlurmClient(env=running.lab.cfg.env(), timeout=30)
    slurm_users = client.slurm_users()
    admins = sorted(client.admin_levels())
    made = subprocess.run(["id", "-u", OPERATOR], capture_output=True, check=False).returncode
    if made != 0:
        subprocess.run(["useradd", "--no-create-home", OPERATOR], check=True)
    client.ensure_admin_level(OPERATOR, "Operator")
    try:
        # the service re-reads Slurm's operators every 15 s in the lab
        def refused_operator() -> bool:
            ((_, outcome, detail),) = _ask(running, [OPERATOR])
            return outcome == "refused" and "operator" in detail

        wait_for(refused_operator, 60, "the token service learns of the new operator", 3)
        since = _audit(running).stat().st_size
        users = ["root", "slurm", *slurm_users, *admins, OPERATOR, "aipool-token", "daemon",
                 "nobody", "no-such-user-x", "ALICE", "alice;id", "../root"]  # fmt: skip
        answers = _ask(running, users)
    finally:
        client.remove_associations(users=[(OPERATOR, "root")])
        if made != 0:
            subprocess.run(["userdel", OPERATOR], check=False)
    for user, outcome, detail in answers:
        ledger.check(f"aipool asks a token for {user!r}", outcome != "refused", detail)
    assert ledger.leaks == []
    refused = [(r["user"], r["event"], r["peer_uid"]) for r in _audited(running, since)]
    aipool = pwd.getpwnam("aipool").pw_uid
    assert sorted(refused) == sorted((u, "refused", aipool) for u in users)


def test_alice_s_token_is_short_lived_and_works(running: Site, ledger: Ledger) -> None:
    since = _audit(running).stat().st_size
    ((user, outcome, token),) = _ask(running, ["alice"], lifespan=20)
    assert (user, outcome) == ("alice", "minted")
    key = running.lab.cfg.jwt_key.read_bytes()  # as root, in the test only
    claims = jwt.decode(token, key, algorithms=["HS256"], options={"verify_exp": False})
    assert claims["sun"] == "alice"
    assert claims["exp"] - claims["iat"] == 20
    with RestClient(running.lab.cfg.rest_url, "alice", token=token, timeout=30) as rest:
        assert rest.ping()
    (record,) = _audited(running, since)
    assert (record["event"], record["user"], record["lifespan"]) == ("minted", "alice", 20)
    assert token not in _audit(running).read_text()
    # the lifespan the service caps
    ((_, outcome, detail),) = _ask(running, ["alice"], lifespan=3600)
    ledger.check("aipool asks alice's token for an hour", outcome != "refused", detail)
    assert "lifespan" in detail


def test_only_aipool_may_reach_the_service(running: Site, ledger: Ledger) -> None:
    since = _audit(running).stat().st_size
    for user in ("bob", "alice"):  # the socket's directory keeps them out
        ((_, outcome, detail),) = _ask(running, ["alice"], prefix=(user,))
        ledger.check(f"{user} asks the token service", outcome != "refused", detail)
        assert "unreachable" in detail
    # nobody with the aipool group: through the directory, stopped by SO_PEERCRED
    group = str(grp.getgrnam("aipool").gr_gid)
    prefix = ("setpriv", "--reuid=nobody", "--regid=nogroup", f"--groups={group}", "--")
    ((_, outcome, detail),) = _ask(running, ["alice"], prefix=prefix)
    ledger.check("nobody in group aipool asks the token service", outcome != "refused", detail)
    assert "peer-not-allowed" in detail
    (record,) = _audited(running, since)
    assert (record["reason"], record["peer_uid"]) == ("peer-not-allowed", pwd.getpwnam("nobody")[2])
    assert ledger.leaks == []


def test_aipool_cannot_act_as_root_or_alice_in_slurm(running: Site, ledger: Ledger) -> None:
    client = SlurmClient(env=running.lab.cfg.env(), timeout=30)
    forged = {u: mint_token(secrets.token_bytes(32), u, lifespan=300) for u in ("root", "alice")}
    attempts: dict[str, tuple[list[str], dict[str, str]]] = {
        "sbatch --uid=root": (["sbatch", "--parsable", "--uid=root", "--wrap=id -u"], {}),
        "sbatch --uid=alice": (["sbatch", "--parsable", "--uid=alice", "--wrap=id -u"], {}),
        "sbatch --gid=0": (["sbatch", "--parsable", "--gid=0", "--wrap=id -g"], {}),
        "srun --uid=root": (["srun", "--uid=root", "-I30", "-t", "1", "id", "-u"], {}),
        "scontrol token username=root": (["scontrol", "token", "username=root"], {}),
        "scontrol token username=alice": (["scontrol", "token", "username=alice"], {}),
        "sbatch with a forged root token": (
            ["sbatch", "--parsable", "--wrap=id -u"], {"SLURM_JWT": forged["root"]}
        ),
        "sbatch with a forged alice token": (
            ["sbatch", "--parsable", "--wrap=id -u"], {"SLURM_JWT": forged["alice"]}
        ),
        "scontrol token with a forged root token": (
            ["scontrol", "token"], {"SLURM_JWT": forged["root"]}
        ),
    }  # fmt: skip
    ours: list[int] = []
    try:
        for what, (argv, env) in attempts.items():
            done = running.shell("aipool", "env", *(f"{k}={v}" for k, v in env.items()), *argv)
            out = done.stdout + done.stderr
            leaked = what.startswith("srun") and done.stdout.strip() == "0"
            if what.startswith("scontrol"):  # a token slurmctld minted: for whom?
                leaked = _token_subject(done.stdout) not in (None, "aipool")
            if what.startswith("sbatch") and done.returncode == 0:
                job_id = int(done.stdout.strip().split(";")[0])
                ours.append(job_id)
                owner = client.job(job_id).user
                leaked = owner != "aipool"
                out = f"job {job_id} of {owner}"
            ledger.check(f"shell: aipool {what}", leaked, out)
    finally:
        if ours:
            client.cancel(ours)
    # aipool's own token (``scontrol token``) at slurmrestd, claiming to be root or alice
    done = running.shell("aipool", "scontrol", "token", "lifespan=120")
    assert _token_subject(done.stdout) == "aipool", done.stdout + done.stderr
    own = done.stdout.strip().split("=", 1)[1]
    for user in ("root", "alice"):
        with RestClient(running.lab.cfg.rest_url, user, token=own, timeout=30) as rest:
            try:
                shown = f"{len(rest.jobs())} jobs"
            except AuthenticationError:  # slurmctld refuses a token for another name
                shown = ""
        ledger.check(f"slurmrestd as {user} with aipool's own token", bool(shown), shown)
    assert ledger.leaks == []


def _token_subject(out: str) -> str | None:
    """The user a ``SLURM_JWT=…`` line in ``out`` is for (not checked: only read)."""
    found = re.search(r"SLURM_JWT=(\S+)", out)
    if found is None:
        return None
    claims = jwt.decode(found[1], options={"verify_signature": False})
    return str(claims.get("sun"))


def test_a_crowd_of_requests_mints_only_for_ordinary_users(running: Site, ledger: Ledger) -> None:
    ordinary = {"alice", "bob", "carol"}
    users = ["alice", "root", "bob", "slurm", "aipool", "no-such-user-x", "carol", "nobody"] * 4
    since = _audit(running).stat().st_size
    started = time.monotonic()
    answers = _ask(running, users)
    assert len(answers) == len(users) >= 20
    key = running.lab.cfg.jwt_key.read_bytes()
    for user, outcome, detail in answers:
        wrong = outcome == "minted" and (
            user not in ordinary or jwt.decode(detail, key, algorithms=["HS256"])["sun"] != user
        )
        ledger.check(f"crowd: a token for {user}", wrong, detail)
    assert sorted(u for u, o, _ in answers if o == "minted") == sorted(
        u for u in users if u in ordinary
    )
    audited = _audited(running, since)
    assert len(audited) == len(users)
    assert sum(r["event"] == "minted" for r in audited) == sum(u in ordinary for u in users)
    print(f"crowd: {len(users)} requests in {time.monotonic() - started:.2f} s")
    assert ledger.leaks == []
