"""Deleting a dataset is complete and its id is never handed out again.

bob (project vision) fills his dataset's workspace from his own shell with entries only he may
change (a directory of mode 0700, files, links out of it) and keeps a process whose working
directory is inside; then he deletes the dataset through the portal. Either it is gone whole, or
the delete is refused with the dataset kept (409), never a 500. Right after, alice (project nlp)
makes a dataset with a workspace of her own and writes a secret in it, while bob's process
keeps trying to read and write through its old working directory, its descriptor of it, and
the old path. Round after round (create and delete by bob, create by alice), bob must never read
or write anything of alice's, and no dataset id may come back.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from pathlib import Path

import pytest

from tests.journeys.conftest import Site
from tests.security.ledger import Ledger

pytestmark = pytest.mark.slurm

ROUNDS = 20

#: bob's prober: from inside his (doomed) workspace, every way back in, for ``seconds``;
#: prints what it read, and the places it wrote into.
PROBE = r"""
import os, sys, time
sub, old, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
os.chdir(sub)
here = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
print("READY", flush=True)
end = time.monotonic() + seconds
while time.monotonic() < end:
    for base in (".", "..", "../..", old, os.path.dirname(old), f"/proc/self/fd/{here}/.."):
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(base, name), errors="replace") as f:
                    print("READ", base, name, f.read(100).replace("\n", " "), flush=True)
            except OSError:
                pass
    for base in ("..", old, f"/proc/self/fd/{here}/.."):
        try:
            with open(os.path.join(base, "bob-was-here"), "w") as f:
                f.write("bob")
            print("WROTE", base, flush=True)
        except OSError:
            pass
    time.sleep(0.02)
"""

#: what bob plants in his workspace: a directory only he may enter, files, links out
PLANT = r"""
import os, sys
ws = sys.argv[1]
os.makedirs(os.path.join(ws, "keep", "deeper"), exist_ok=True)
for i in range(30):
    with open(os.path.join(ws, "keep", "deeper", f"f{i}"), "w") as f:
        f.write("bob's")
os.symlink("/etc", os.path.join(ws, "keep", "to-etc"))
os.symlink("../..", os.path.join(ws, "up"))
with open(os.path.join(ws, "mine.txt"), "w") as f:
    f.write("bob's")
os.chmod(os.path.join(ws, "keep", "deeper"), 0o700)
os.chmod(os.path.join(ws, "keep"), 0o700)
os.chmod(os.path.join(ws, "mine.txt"), 0o600)
"""


def _project(site: Site, user: str, name: str) -> int:
    return {p["name"]: p["id"] for p in site.api(user).get("/projects").json()}[name]


def _dataset_with_workspace(site: Site, user: str, project: str, name: str) -> tuple[int, Path]:
    api = site.api(user)
    r = api.post(
        "/datasets",
        json={"project_id": _project(site, user, project), "name": name, "visibility": "private"},
    )
    assert r.status_code == 201, r.text
    ds = int(r.json()["id"])
    m = api.post(f"/datasets/{ds}/mounts", json={"mode": "rw"})
    assert m.status_code == 200, m.text
    return ds, Path(m.json()["path"])


def _as(user: str, *argv: str) -> list[str]:
    return ["runuser", "-u", user, "--", *argv]


def _bob_owned(tree: Path) -> list[str]:
    import pwd

    bob = pwd.getpwnam("bob").pw_uid
    found = []
    for root, dirs, files in os.walk(tree):
        for name in [*dirs, *files]:
            p = Path(root) / name
            if p.lstat().st_uid == bob or name == "bob-was-here":
                found.append(str(p))
    return found


def test_a_deleted_dataset_goes_whole_and_its_id_never_comes_back(
    site: Site, ledger: Ledger
) -> None:
    bob, alice = site.api("bob"), site.api("alice")
    ids: list[int] = []
    gone = refused = 0
    for n in range(ROUNDS):
        tag = secrets.token_hex(4)
        ds, ws = _dataset_with_workspace(site, "bob", "vision", f"doomed-{tag}")
        ids.append(ds)
        planted = subprocess.run(
            _as("bob", "python3", "-I", "-c", PLANT, str(ws)),
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert planted.returncode == 0, planted.stderr
        probe = subprocess.Popen(
            _as("bob", "python3", "-I", "-c", PROBE, str(ws / "keep"), str(ws), "6"),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert probe.stdout is not None
        assert probe.stdout.readline().strip() == "READY"
        control = ""
        while "bob's" not in control and (line := probe.stdout.readline()):
            control += line
        assert "bob's" in control  # control: the prober reads his own files while they exist
        try:
            r = bob.delete(f"/datasets/{ds}")
            assert r.status_code in (204, 409), (r.status_code, r.text)
            if r.status_code == 204:
                gone += 1
                assert not ws.exists(), f"{ws} left after the delete"
                assert not ws.parent.exists(), f"{ws.parent} left after the delete"
                assert bob.get(f"/datasets/{ds}").status_code == 404
            else:
                refused += 1
                assert bob.get(f"/datasets/{ds}").status_code == 200  # kept, to delete later
                assert r.json()["message"]
            secret = f"ALICE-WS-{secrets.token_hex(8)}"
            theirs, hers = _dataset_with_workspace(site, "alice", "nlp", f"hers-{tag}")
            ids.append(theirs)
            wrote = subprocess.run(
                _as("alice", "python3", "-I", "-c",
                    "import sys; open(sys.argv[1], 'w').write(sys.argv[2])",
                    str(hers / "secret.txt"), secret),
                capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            assert wrote.returncode == 0, wrote.stderr  # control: hers to write
            time.sleep(0.5)  # bob's prober goes on for a while with alice's workspace there
        finally:
            probe.terminate()
            shown, _ = probe.communicate(timeout=30)
        ledger.attempt(f"round {n}: bob's process reads alice's new workspace", shown, secret)
        ledger.attempt(f"round {n}: bob's process writes into it", "\n".join(_bob_owned(hers)),
                       str(hers))  # fmt: skip
        if r.status_code == 409:  # nothing of bob's runs inside any more: it goes now
            assert bob.delete(f"/datasets/{ds}").status_code == 204
        assert alice.delete(f"/datasets/{theirs}").status_code == 204
        assert not hers.parent.exists()
    print(f"\n{ROUNDS} rounds: {gone} deleted at once, {refused} refused and kept; ids {ids}")
    assert len(set(ids)) == len(ids), f"an id came back: {ids}"
    assert ledger.leaks == []
