"""A hostile tenant and a compromised service account race what the other suites leave open.

bob (project vision) flips a file of his dataset's workspace between a plain name and one in
bytes that are no UTF-8 while the portal copies the workspace into versions, and then deletes
the dataset; he swaps a file of the workspace for a pipe, a socket and a link to a device
while it is copied. A compromised ``aipool`` account asks the root helper to run the
as-the-user agent as system accounts (Debian's ``slurm``, ``nobody``, the token service's
user, root) on a path that a link of its own, swapped in and out, leads to a file only Slurm's
user may read, and with paths and tasks the helper does not take; and through such a link it
leads the agent, as an ordinary user, out of the places the agent serves. Each race runs at
least 20 times; a leak is a 500 from the portal, a file of another's shown, or a call the
helper ran. Leaks must be 0.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from tests.journeys.conftest import Site
from tests.security.ledger import Ledger
from tests.security.racing import project, racer, stop

pytestmark = pytest.mark.slurm

TRIES = 20
BIG_BYTES = 16 * 2**20  # first in the listing: the copy spends its time on it


def _workspace(site: Site, bob: httpx.Client, fill: str) -> tuple[int, Path]:
    """A new dataset of bob's with a read-write mount, its workspace filled by ``fill`` (Python
    run as bob, ``ws`` the workspace's path)."""
    name = f"red-{secrets.token_hex(4)}"
    r = bob.post("/datasets", json={"name": name, "project_id": project(bob, "vision")})
    assert r.status_code == 201, r.text
    ds = int(r.json()["id"])
    mount = bob.post(f"/datasets/{ds}/mounts", json={"mode": "rw", "name": "out"})
    assert mount.status_code in (200, 201), mount.text
    workspace = Path(mount.json()["path"])
    code = f"import os\nws = {str(workspace)!r}\n" + textwrap.dedent(fill)
    done = site.shell("bob", "python3", "-c", code)
    assert done.returncode == 0, done.stderr
    return ds, workspace


def _copies(
    bob: httpx.Client, ds: int, what: str, ledger: Ledger, refused: tuple[int, ...]
) -> dict[int, int]:
    """TRIES copies of the workspace into versions; a 500, or a refusal not in ``refused``,
    is a leak."""
    outcomes: dict[int, int] = {}
    for attempt in range(TRIES):
        r = bob.post(f"/datasets/{ds}/versions", json={"source": "workspace"})
        outcomes[r.status_code] = outcomes.get(r.status_code, 0) + 1
        ledger.attempts.append(f"{what} {attempt}")
        if r.status_code != 201 and r.status_code not in refused:
            ledger.leaks.append(f"{what} {attempt}: HTTP {r.status_code} {r.text[:200]}")
            continue
        if r.status_code == 201:
            files = bob.get(f"/datasets/{ds}/versions/{r.json()['version']}/files")
            ledger.attempts.append(f"{what} {attempt}: the version's files are listed")
            if files.status_code != 200:
                ledger.leaks.append(f"{what} {attempt}: its files answer {files.status_code}")
    return outcomes


# ---------------------------------------------------------------- names in any bytes
FLIPPER = """
import os, sys, time
ws = os.fsencode(sys.argv[1])
plain, odd = os.path.join(ws, b"zz-name.txt"), os.path.join(ws, b"zz-\\xff\\xfe-name.txt")
while True:
    for a, b in ((plain, odd), (odd, plain)):
        try:
            os.rename(a, b)
        except OSError:
            pass
        time.sleep(0.003)
"""


def test_a_file_named_in_bytes_that_are_no_utf8_gets_a_refusal_never_a_500(
    site: Site, ledger: Ledger
) -> None:
    bob, seen = site.api("bob"), len(ledger.leaks)
    ds, workspace = _workspace(
        site,
        bob,
        f"""
        with open(os.path.join(ws, "aaa-big.bin"), "wb") as f:
            f.truncate({BIG_BYTES})
        with open(os.path.join(ws, "zz-name.txt"), "w") as f:
            f.write("bob's own")
        odd = os.fsencode(os.path.join(ws, "sub")) + b"-\\xc3"
        os.makedirs(odd, exist_ok=True)
        with open(os.path.join(odd, b"inside.txt"), "w") as f:
            f.write("bob's own")
        """,
    )
    deleted = False
    try:
        # the control: a directory named in such bytes is refused with a sentence, not a 500
        r = bob.post(f"/datasets/{ds}/versions", json={"source": "workspace"})
        ledger.attempts.append("a directory named in bytes that are no UTF-8")
        if r.status_code != 422:
            ledger.leaks.append(f"a directory named in odd bytes: HTTP {r.status_code}")
        shutil.rmtree(os.fsencode(workspace) + b"/sub-\xc3")
        flipper = racer("bob", FLIPPER, str(workspace))
        try:
            outcomes = _copies(bob, ds, "copy racing a name flipped to odd bytes", ledger, (422,))
        finally:
            stop(flipper)
        print(f"workspace copies while a name flipped to bytes that are no UTF-8: {outcomes}")
        # the dataset goes whole, whatever its writers named their files
        odd = os.fsencode(workspace) + b"/zz-\xff\xfe-name.txt"
        if not os.path.lexists(odd):
            os.rename(workspace / "zz-name.txt", odd)
        r = bob.delete(f"/datasets/{ds}")
        ledger.attempts.append("delete a dataset whose workspace holds a name in odd bytes")
        deleted = r.status_code == 204
        if not deleted:
            ledger.leaks.append(f"delete with an odd name inside: HTTP {r.status_code}")
        assert ledger.leaks[seen:] == [], ledger.leaks[seen:]
    finally:
        if not deleted:
            bob.delete(f"/datasets/{ds}")


# ---------------------------------------------------------------- special files swapped in
SPECIALS = """
import os, socket, sys, time
ws = sys.argv[1]
name, spare = os.path.join(ws, "zz-file"), os.path.join(ws, "zz-spare")
i = 0
while True:
    i += 1
    try:
        kind = i % 3
        tmp = os.path.join(ws, f".t{i}")
        if kind == 0:
            os.mkfifo(tmp)
        elif kind == 1:
            s = socket.socket(socket.AF_UNIX)
            s.bind(tmp)
            s.close()
        else:
            os.symlink("/dev/zero", tmp)
        os.rename(name, spare)          # the listed file goes...
        os.rename(tmp, name)            # ... and a pipe, socket or device link takes its name
        time.sleep(0.002)
        os.unlink(name)
        os.rename(spare, name)
    except OSError:
        time.sleep(0.001)
"""


def test_pipes_sockets_and_device_links_swapped_in_mid_copy_are_refused(
    site: Site, ledger: Ledger
) -> None:
    bob, seen = site.api("bob"), len(ledger.leaks)
    ds, workspace = _workspace(
        site,
        bob,
        f"""
        with open(os.path.join(ws, "aaa-big.bin"), "wb") as f:
            f.truncate({BIG_BYTES})
        with open(os.path.join(ws, "zz-file"), "w") as f:
            f.write("bob's own")
        """,
    )
    try:
        swapper = racer("bob", SPECIALS, str(workspace))
        started = time.monotonic()
        try:
            outcomes = _copies(bob, ds, "copy racing pipes and device links", ledger, (422,))
        finally:
            stop(swapper)
        print(f"workspace copies while special files were swapped in: {outcomes}")
        # a pipe never held the copy: each took about as long as reading the big file
        assert time.monotonic() - started < 300
        for number in range(1, TRIES + 1):
            files = bob.get(f"/datasets/{ds}/versions/{number}/files")
            if files.status_code != 200:
                continue
            for entry in files.json():
                ledger.attempts.append(f"version {number}: {entry['path']} is bob's")
                if entry["path"] == "zz-file" and entry["size"] != len("bob's own"):
                    ledger.leaks.append(f"version {number}: zz-file holds {entry['size']} bytes")
        assert ledger.leaks[seen:] == [], ledger.leaks[seen:]
    finally:
        bob.delete(f"/datasets/{ds}")


# ---------------------------------------------------------------- a compromised aipool
LINKER = """
import os, sys, time
link, targets = sys.argv[1], sys.argv[2:]
i = 0
while True:
    i += 1
    tmp = f"{link}.{i}"
    try:
        os.symlink(targets[i % len(targets)], tmp)
        os.rename(tmp, link)            # atomically: the link now leads elsewhere
    except OSError:
        pass
    time.sleep(0.001)
"""


def _as_aipool(helper: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    argv = ["runuser", "-u", "aipool", "--", "sudo", "-n", str(helper), *args]
    return subprocess.run(argv, capture_output=True, timeout=60, check=False)


def test_a_compromised_aipool_cannot_make_the_helper_act_as_a_system_account(
    site: Site, ledger: Ledger
) -> None:
    helper, seen = site.lab.cfg.root_helper, len(ledger.leaks)
    runs = site.lab.cfg.root / "portal" / "model-work"
    # what only Slurm's own account reads (its JWT key, where SlurmUser is Debian's slurm)
    secret = f"slurm-only-{secrets.token_hex(8)}"
    accounts = [a for a in ("slurm", "nobody", "aipool-token", "daemon", "root") if _exists(a)]
    probe = Path(f"/var/tmp/red-team-{secrets.token_hex(4)}")
    probe.mkdir(mode=0o755)
    (probe / "own").mkdir(mode=0o700)
    (probe / "own" / "key").write_text(secret)
    owner = pwd.getpwnam("slurm") if _exists("slurm") else pwd.getpwnam("nobody")
    for path in (probe / "own", probe / "own" / "key"):
        os.chown(path, owner.pw_uid, owner.pw_gid)
    (probe / "own" / "key").chmod(0o600)
    link = runs / f"red-{secrets.token_hex(4)}"
    decoy = runs / f"red-decoy-{secrets.token_hex(4)}"
    subprocess.run(["runuser", "-u", "aipool", "--", "mkdir", "-p", f"{decoy}/own"], check=True)
    linker = racer("aipool", LINKER, str(link), str(probe), str(decoy))
    try:
        time.sleep(0.2)
        for attempt in range(TRIES):
            task = "pack-deref" if attempt % 2 else "pack"
            for account in accounts:
                done = _as_aipool(helper, "as-user", account, task, f"{link}/own")
                what = f"as-user {account} {task} through a swapped link ({attempt})"
                ledger.attempt(what, done.stdout.decode("latin-1"), secret)
                if done.returncode == 0 or b"system account" not in done.stderr:
                    ledger.leaks.append(f"{what}: the helper ran it ({done.returncode})")
    finally:
        stop(linker)
        subprocess.run(["runuser", "-u", "aipool", "--", "rm", "-rf", str(decoy)], check=False)
        for left in runs.glob(f"{link.name}*"):
            subprocess.run(["runuser", "-u", "aipool", "--", "rm", "-f", str(left)], check=False)
        shutil.rmtree(probe)
    # words the helper does not take: each refused before anything runs
    bob_runs = runs / "bob"
    crafted = [
        ["as-user", "bob", "pack", f"{runs}/../../etc"],
        ["as-user", "bob", "pack", "etc/passwd"],
        ["as-user", "bob", "pack", "/etc"],
        ["as-user", "bob", "pack", f"{bob_runs}/./x"],
        ["as-user", "bob", "exec", f"{bob_runs}/x"],
        ["as-user", "bob", "pack", f"{bob_runs}/x", "extra"],
        ["as-user", "Bob", "pack", f"{bob_runs}/x"],
        ["as-user", "bob;id", "pack", f"{bob_runs}/x"],
        ["as-user", "1002", "pack", f"{bob_runs}/x"],
        ["as-user", "bob", "pack", str(runs) + "-other/bob"],
    ]
    for args in crafted:
        done = _as_aipool(helper, *args)
        what = f"helper {args!r}"
        ledger.attempts.append(what)
        if done.returncode == 0 or not done.stderr.startswith(b"aipool-helper: "):
            ledger.leaks.append(f"{what}: ran ({done.returncode}) {done.stderr[:120]!r}")
    assert ledger.leaks[seen:] == [], ledger.leaks[seen:]


def test_a_compromised_aipool_cannot_lead_the_agent_out_of_its_roots_by_a_link(
    site: Site, ledger: Ledger
) -> None:
    """The helper checks the agent's path as words; a link of ``aipool``'s own below one of the
    agent's roots (the runs' directory and the dataset store are ``aipool``'s) must not lead
    the agent, acting as an ordinary user, to that user's files elsewhere (their home: no
    place the portal acts in). A link that leads out is to be refused, whenever it is
    swapped in."""
    helper, seen = site.lab.cfg.root_helper, len(ledger.leaks)
    runs = site.lab.cfg.root / "portal" / "model-work"
    bob = pwd.getpwnam("bob")
    secret = f"bob-home-only-{secrets.token_hex(8)}"
    private = Path(bob.pw_dir) / f".red-team-{secrets.token_hex(4)}"
    private.mkdir(mode=0o700)
    (private / "own").mkdir(mode=0o700)
    (private / "own" / "note").write_text(secret)
    for path in (private, private / "own", private / "own" / "note"):
        os.chown(path, bob.pw_uid, bob.pw_gid)
    link = runs / f"red-{secrets.token_hex(4)}"
    decoy = runs / f"red-decoy-{secrets.token_hex(4)}"
    subprocess.run(["runuser", "-u", "aipool", "--", "mkdir", "-p", f"{decoy}/own"], check=True)
    linker = racer("aipool", LINKER, str(link), str(private), str(decoy))
    try:
        time.sleep(0.2)
        for attempt in range(TRIES):
            task = "pack-deref" if attempt % 2 else "pack"
            done = _as_aipool(helper, "as-user", "bob", task, f"{link}/own")
            what = f"as-user bob {task} through a link out of the agent's roots ({attempt})"
            ledger.attempt(what, done.stdout.decode("latin-1"), secret)
    finally:
        stop(linker)
        subprocess.run(["runuser", "-u", "aipool", "--", "rm", "-rf", str(decoy)], check=False)
        for left in runs.glob(f"{link.name}*"):
            subprocess.run(["runuser", "-u", "aipool", "--", "rm", "-f", str(left)], check=False)
        shutil.rmtree(private)
    assert ledger.leaks[seen:] == [], ledger.leaks[seen:]


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True
