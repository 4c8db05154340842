"""A hostile tenant races the services where they work in places he can write.

bob (project vision) swaps links and renames into his dataset's workspace while the portal
copies it into a new version, and plants links in his run directories while the portal stages
a model there for his evaluation. Each race is run at least 20 times, with a large file first
in the tree to widen the window. The services act there only through the as-the-user agent
(as bob), so whatever bob swaps in can show him nothing he could not read himself, and the
portal never writes or changes a mode through a link. Every attempt is counted; a leak is an
attempt that put something of alice's, of the portal's or of Slurm's where bob reads it, or
changed a file of theirs. Leaks must be 0, and no request may fail with a 500.
"""

from __future__ import annotations

import os
import pwd
import secrets
import stat
import textwrap
import time
from pathlib import Path

import pytest

from tests.journeys.conftest import Site, import_preset, wait_for
from tests.security.ledger import Ledger
from tests.security.racing import project, racer, stop

pytestmark = pytest.mark.slurm

TRIES = 20
BIG_BYTES = 48 * 2**20  # first in the listing: the copy spends its time on it


def _targets(site: Site) -> dict[str, Path]:
    """Where bob points his links: places only others may read or write."""
    cfg = site.lab.cfg
    return {
        "lab etc (the JWT key, passwords)": cfg.etc,
        "the portal's home (its database)": cfg.root / "portal",
        "the services' home": cfg.run / "aipool-home",
        "alice's job directory": cfg.root / "portal" / "users" / "alice",
        "root's home": Path("/root"),
    }


# ---------------------------------------------------------------- the workspace copy
SWAPPER = """
import os, sys, time
ws, targets = sys.argv[1], sys.argv[2:]
sub, real = os.path.join(ws, "zz"), os.path.join(ws, "zz.real")
i = 0
while True:
    target = targets[i % len(targets)]
    i += 1
    try:
        os.rename(sub, real)            # the listed directory goes...
        os.symlink(target, sub)         # ... and a link to another's files takes its name
        time.sleep(0.002)
        os.unlink(sub)
        os.rename(real, sub)
    except OSError:
        time.sleep(0.001)
"""


def test_links_swapped_into_a_workspace_while_it_is_copied_show_bob_nothing(
    site: Site, ledger: Ledger
) -> None:
    bob = site.api("bob")
    name = f"race-{secrets.token_hex(4)}"
    r = bob.post("/datasets", json={"name": name, "project_id": project(bob, "vision")})
    assert r.status_code == 201, r.text
    ds = r.json()["id"]
    try:
        mount = bob.post(f"/datasets/{ds}/mounts", json={"mode": "rw", "name": "out"})
        assert mount.status_code in (200, 201), mount.text
        workspace = Path(mount.json()["path"])
        fill = f"""
            import os
            ws = {str(workspace)!r}
            with open(os.path.join(ws, "aaa-big.bin"), "wb") as f:
                f.truncate({BIG_BYTES})
            os.makedirs(os.path.join(ws, "zz"), exist_ok=True)
            for i in range(3):
                with open(os.path.join(ws, "zz", f"own-{{i}}.txt"), "w") as f:
                    f.write("bob's own")
        """
        done = site.shell("bob", "python3", "-c", textwrap.dedent(fill))
        assert done.returncode == 0, done.stderr
        # the control: with nobody racing, the copy is made, of bob's files only
        r = bob.post(f"/datasets/{ds}/versions", json={"source": "workspace"})
        assert r.status_code == 201, r.text
        assert r.json()["file_count"] == 4
        targets = _targets(site)
        swapper = racer("bob", SWAPPER, str(workspace), *(str(t) for t in targets.values()))
        outcomes: dict[int, int] = {}
        try:
            for attempt in range(TRIES):
                r = bob.post(f"/datasets/{ds}/versions", json={"source": "workspace"})
                outcomes[r.status_code] = outcomes.get(r.status_code, 0) + 1
                what = f"workspace copy {attempt} racing links to {', '.join(targets)}"
                if r.status_code >= 500:
                    ledger.leaks.append(f"{what}: HTTP {r.status_code} {r.text[:200]}")
                    continue
                ledger.attempts.append(what)
                if r.status_code != 201:
                    assert r.status_code == 422, r.text  # a link refused
                    continue
                number = r.json()["version"]
                files = bob.get(f"/datasets/{ds}/versions/{number}/files").json()
                names = sorted(f["path"] for f in files)
                own = ("aaa-big.bin", "zz/own-", "zz.real/own-")  # bob's, renamed or not
                foreign = [n for n in names if not n.startswith(own)]
                if foreign:
                    ledger.leaks.append(f"{what}: the version holds {foreign[:5]}")
        finally:
            stop(swapper)
        assert sum(outcomes.values()) == TRIES
        print(f"workspace copies while links were swapped in: {outcomes}")
        assert ledger.leaks == [], ledger.leaks
    finally:
        bob.delete(f"/datasets/{ds}")


# ---------------------------------------------------------------- the model staging
PLANTER = """
import os, sys, time
root, targets = sys.argv[1], sys.argv[2:]
seen = set(os.listdir(root)) if os.path.isdir(root) else set()
i = 0
while True:
    try:
        names = set(os.listdir(root))
    except OSError:
        time.sleep(0.001)
        continue
    for name in names - seen:
        i += 1
        for link in ("model", "base", ".model"):
            try:
                os.symlink(targets[i % len(targets)], os.path.join(root, name, link))
            except OSError:
                pass
    seen = names
"""


def _modes(paths: list[Path]) -> dict[str, tuple[int, int, list[str]]]:
    """Mode, owner and entries of each path, to see that nothing was changed through a link."""
    out = {}
    for path in paths:
        st = path.lstat()
        entries = sorted(os.listdir(path)) if stat.S_ISDIR(st.st_mode) else []
        out[str(path)] = (stat.S_IMODE(st.st_mode), st.st_uid, entries)
    return out


def test_links_planted_in_a_run_directory_while_a_model_is_staged_change_nothing(
    site: Site, ledger: Ledger
) -> None:
    bob = site.api("bob")
    model_id = import_preset(bob, "vision")
    runs = site.lab.cfg.root / "portal" / "model-work" / "bob"
    targets = _targets(site)
    watched = [t for t in targets.values() if t.exists()]
    before = _modes(watched)
    jobs: list[int] = []
    outcomes: dict[int, int] = {}
    # the control: with nobody racing, the model is staged and the evaluation submitted
    r = bob.post(f"/models/{model_id}/versions/1/evaluations", json={})
    assert r.status_code == 201, r.text
    jobs.append(int(r.json()["job_id"]))
    planter = racer("bob", PLANTER, str(runs), *(str(t) for t in targets.values()))
    try:
        time.sleep(0.5)  # the planter has listed bob's runs
        for attempt in range(TRIES):
            r = bob.post(f"/models/{model_id}/versions/1/evaluations", json={})
            outcomes[r.status_code] = outcomes.get(r.status_code, 0) + 1
            what = f"model staging {attempt} racing links planted in the run directory"
            if r.status_code >= 500:
                ledger.leaks.append(f"{what}: HTTP {r.status_code} {r.text[:200]}")
                continue
            ledger.attempts.append(what)
            if r.status_code == 201:
                jobs.append(int(r.json()["job_id"]))
            else:  # refused because of the link bob planted, and for nothing else
                assert r.status_code == 409, r.text
                assert "model" in r.json()["message"], r.text
    finally:
        stop(planter)
        for job_id in jobs:
            site.shell("bob", "scancel", str(job_id))
    after = _modes(watched)
    for path, was in before.items():
        ledger.attempts.append(f"{path} unchanged by {TRIES} stagings")
        if after[path] != was:
            ledger.leaks.append(f"{path} changed: {was} -> {after[path]}")
    # every copy that was made is bob's, made by bob's own process
    for run in runs.iterdir() if runs.is_dir() else []:
        model = run / "model"
        if model.is_dir() and not model.is_symlink():
            ledger.attempts.append(f"{model} is bob's")
            if model.stat().st_uid != pwd.getpwnam("bob").pw_uid:
                ledger.leaks.append(f"{model} was made by someone else")
    print(f"model stagings while links were planted: {outcomes}")
    assert sum(outcomes.values()) == TRIES
    assert ledger.leaks == [], ledger.leaks
    wait_for(lambda: bob.delete(f"/models/{model_id}").status_code != 409, 60, "model gone")
