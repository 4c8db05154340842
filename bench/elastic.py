"""Resume-to-running latency of elastic nodes in the lab: a job that lands on a powered-down
node (Slurm resumes it through AIPool's resume program, the lab driver starts its slurmd)
against the same job on an always-up node, in the same run.

It brings up a lab of its own with the elastic inventory (aipool/lab/elastic.yaml, the lab's
root plus ``-elastic-bench``, ports +240: not at the same time as tests/integration/
test_elastic.py), then per round: a job pinned to the always-up ``gpu1``, then one pinned to
the powered-down ``egpu1``, each timed from submission to RUNNING, and the powered-down one
split into submit -> node up (sinfo without ``#``) -> running. Between rounds egpu1 idles until
Slurm has powered it down again. Run as root, with the job runtime up to date
(`aipool lab services up` or scripts/install-runtime.sh):

    .venv/bin/python bench/elastic.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aipool.lab.cluster import Lab
from aipool.lab.config import LabConfig
from slurm_plugins.client import SlurmClient
from slurm_plugins.power.plan import Power

JOB = ["--partition=gpu", "--gres=gpu:1", "--output=/dev/null", "--chdir=/tmp"]
SCRIPT = "#!/bin/bash\nsleep 1\n"


def wait(check: Callable[[], bool], timeout: float, interval: float = 0.05) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():
            return time.monotonic() - start
        time.sleep(interval)
    raise SystemExit(f"not within {timeout:g} s: {check}")


def running(client: SlurmClient, job_id: int) -> bool:
    jobs = {j.job_id: j for j in client.jobs()}
    job = jobs.get(job_id)
    return job is None or job.state.value in ("RUNNING", "COMPLETING", "COMPLETED")


def power_of(client: SlurmClient, node: str) -> Power:
    return Power.of_sinfo(client.node_states()[node])


def one(client: SlurmClient, node: str) -> tuple[float, float]:
    """(seconds submit -> node up, seconds submit -> running) of a job pinned to ``node``."""
    t0 = time.monotonic()
    job = client.submit(SCRIPT, [*JOB, f"--nodelist={node}"])
    up: float | None = None
    while (now := time.monotonic() - t0) < 120:
        if up is None and power_of(client, node) is Power.ON:
            up = now
        if running(client, job):
            return (now if up is None else up), now
        time.sleep(0.05)
    raise SystemExit(f"job {job} on {node}: not running within 120 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    base = LabConfig.from_env()
    cfg = replace(
        LabConfig(),
        root=Path(f"{base.root}-elastic-bench"),
        cluster="elbench",
        ports=base.ports.shifted(240),
    ).elastic()
    lab = Lab(cfg)
    started = time.monotonic()
    lab.up()
    print(f"elastic lab up in {time.monotonic() - started:.1f} s")
    client = SlurmClient(env=cfg.env(), timeout=30)
    always: list[float] = []
    elastic: list[float] = []
    node_up: list[float] = []
    try:
        for n in range(args.rounds):
            wait(lambda: power_of(client, "egpu1") is Power.OFF, 120, 0.5)
            always.append(one(client, "gpu1")[1])
            up, ran = one(client, "egpu1")
            elastic.append(ran)
            node_up.append(up)
            print(
                f"round {n + 1}: always-up {always[-1]:.2f} s, powered-down {ran:.2f} s "
                f"(node up after {up:.2f} s)"
            )
    finally:
        lab.down()
        with contextlib.suppress(OSError):  # the emptied lab directory
            cfg.root.rmdir()
    a, e, u = (statistics.median(x) for x in (always, elastic, node_up))
    print(f"{'job on':<22}{'submit -> running (median)':>28}")
    print(f"{'always-up node':<22}{a:>26.2f} s")
    print(f"{'powered-down node':<22}{e:>26.2f} s   ratio {e / a:.1f}x; node up after {u:.2f} s")


if __name__ == "__main__":
    main()
