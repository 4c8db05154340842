"""The lab comes up whatever this host's name resolves to.

Debian's installer maps the host name to 127.0.1.1; other machines map it to 127.0.0.1, ::1
or a real address. Each case is a lab of its own (own root and ports), brought up by the real
``aipool lab up`` in a mount namespace whose ``/etc/hosts`` says so, then taken down.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from aipool.lab.cluster import Lab

SCRIPT = r"""
set -euo pipefail
mount --bind "$HOSTS" /etc/hosts
getent ahostsv4 "$(hostname)" | head -n1 || true
trap '"$PY" -m aipool.cli lab down >/dev/null 2>&1 || true' EXIT
"$PY" -m aipool.cli lab up
"$PY" -m aipool.cli lab status
eval "$("$PY" -m aipool.cli lab env)"
sacctmgr -n -P show cluster format=cluster
sinfo -h -N -o '%N %t'
"""


@pytest.mark.parametrize(
    ("address", "shift"), [("127.0.1.1", 300), ("127.0.0.1", 330), ("::1", 360)]
)
def test_lab_up_whatever_the_host_name_resolves_to(
    lab: Lab, tmp_path: Path, address: str, shift: int
) -> None:
    name = socket.gethostname()
    hosts = tmp_path / "hosts"
    hosts.write_text(
        f"127.0.0.1\tlocalhost\n{address}\t{name}\n::1     localhost ip6-localhost ip6-loopback\n"
    )
    cluster = f"hosts{shift}"
    env = {
        **os.environ,
        "HOSTS": str(hosts),
        "PY": sys.executable,
        "AIPOOL_LAB_DIR": f"{lab.cfg.root}-{cluster}",
        "AIPOOL_LAB_CLUSTER": cluster,
        # beside the lab under test, at its offset plus the shift: two labs under test at
        # different offsets (CI's two roots at once) never take the same ports
        "AIPOOL_LAB_PORT_OFFSET": str(lab.cfg.ports.offset + shift),
    }
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "bash", "-c", SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    if address != "::1":
        assert out.splitlines()[0].split()[0] == address  # the namespace really says so
    assert f"host name {name} resolves to {address}" in out
    assert f"the lab's daemons see {lab.cfg.address}" in out
    assert cluster in done.stdout.split()  # slurmdbd knows the cluster: slurmctld reached it
    nodes = [ln.split() for ln in done.stdout.splitlines() if ln.endswith(" idle")]
    assert len(nodes) >= 4, out
    assert not Path(f"{lab.cfg.root}-{cluster}", "lab.json").exists()  # taken down again
