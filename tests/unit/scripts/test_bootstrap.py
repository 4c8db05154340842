"""scripts/bootstrap.sh on a machine that cannot reach the package registries: it tries once
more, then names the packages it could not install and stops, before anything else."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MISSING = ("slurm-wlm-jwt-plugin", "shellcheck")


def test_without_the_registries_it_names_what_it_could_not_install(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "dpkg-query").write_text(
        "#!/bin/sh\n"
        f'for p in {" ".join(MISSING)}; do [ "$3" = "$p" ] && exit 1; done\n'
        "printf 'install ok installed'\n"
    )
    calls = tmp_path / "apt-get.calls"
    (fake / "apt-get").write_text(
        f'#!/bin/sh\necho "$*" >>{calls}\n'
        "echo 'E: Failed to fetch: Temporary failure resolving' >&2\nexit 100\n"
    )
    for f in fake.iterdir():
        f.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "AIPOOL_APT_RETRY_WAIT": "0"}
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "bootstrap.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    said = done.stderr.splitlines()
    assert f"bootstrap: could not install these Debian packages: {' '.join(MISSING)}" in said
    assert any("reaches Debian's package registry" in line for line in said)
    assert "bootstrap done" not in done.stdout
    # a mirror mid-update fails for a while: the install was tried again on fresh indexes
    argvs = calls.read_text().splitlines()
    assert [a.split()[-1] for a in argvs if " install " not in a] == ["update", "update"]
    assert sum(" install " in a for a in argvs) == 2
    assert "bootstrap: apt-get install failed; again in 0 s" in said
