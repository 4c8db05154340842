"""Submission throughput against the lab: plain sbatch loop (baseline) vs the AIPool client.

All jobs are submitted held (``-H``) so nothing runs, and cancelled at the end. Later
changes (the admission hook) compare against the figures this prints.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time

from aipool.lab.cluster import Lab
from slurm_plugins.client import SlurmClient

SCRIPT = "#!/bin/bash\ntrue\n"


def plain_sbatch(n: int, env: dict[str, str]) -> tuple[float, list[int]]:
    ids = []
    t0 = time.perf_counter()
    for _ in range(n):
        out = subprocess.run(
            ["sbatch", "--parsable", "-H", "--partition=cpu", "--wrap=true"],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        ids.append(int(out.stdout.split(";")[0]))
    return time.perf_counter() - t0, ids


def via_client(client: SlurmClient, n: int) -> tuple[float, list[int]]:
    ids = []
    t0 = time.perf_counter()
    for _ in range(n):
        ids.append(client.submit(SCRIPT, ["-H", "--partition=cpu"]))
    return time.perf_counter() - t0, ids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--jobs", type=int, default=300)
    args = ap.parse_args()
    lab = Lab()
    if not lab.is_up():
        raise SystemExit("the lab is not up: run `aipool lab up` first")
    env = {**os.environ, **lab.cfg.env()}
    client = SlurmClient(env=lab.cfg.env())
    n = args.jobs
    rounds = 3  # alternate the two loops so warm-up and drift hit both alike
    base_t = cli_t = 0.0
    mine: list[int] = []  # only what this benchmark submitted is cancelled at the end
    try:
        for _ in range(rounds):
            spent, ids = plain_sbatch(n // rounds, env)
            base_t += spent
            mine += ids
            spent, ids = via_client(client, n // rounds)
            cli_t += spent
            mine += ids
        n = rounds * (n // rounds)
        t0 = time.perf_counter()
        mine.append(client.submit(SCRIPT, ["-H", "--partition=cpu", f"--array=1-{n}"]))
        arr_t = time.perf_counter() - t0
    finally:
        client.cancel(mine)
    base, cli = n / base_t, n / cli_t
    print(f"plain sbatch loop (baseline): {base:7.1f} jobs/s  ({base_t:.2f} s for {n})")
    print(f"SlurmClient.submit loop:      {cli:7.1f} jobs/s  ratio {cli / base:.2f}x")
    print(f"one array of {n}:            {n / arr_t:9.1f} jobs/s  ratio {n / arr_t / base:.1f}x")


if __name__ == "__main__":
    main()
