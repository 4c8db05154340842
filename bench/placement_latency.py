"""Submit -> running on the lab with the placement daemon and without it, in the same run.

With the daemon (the lab's placement settings, run as the service user, its heartbeat fresh)
the admission hook defers every GPU and NPU job and the daemon, woken by slurmctld's job
counters, pins it to the scorer's node and starts it. Without it (stopped, heartbeat gone)
jobs go straight to Slurm. Blocks of each alternate; every round submits one job as a demo
user on an otherwise idle cluster (shapes in turn: a whole card, two cards, a share of a
card, an NPU, CPU work on a GPU node) and times it from just before ``sbatch`` to
``RUNNING`` (``squeue`` every 20 ms). The job is then cancelled and gone before the next one:
slurmctld's scheduler waits while a job is completing, with or without the daemon.

    flock /tmp/aipool-lab.lock .venv/bin/python bench/placement_latency.py [--blocks 4] [--per 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from aipool.lab import placement  # noqa: E402
from aipool.lab.cluster import Lab  # noqa: E402

SHAPES = (
    ("-p", "gpu", "--gres=gpu:1"),
    ("-p", "gpu", "--gres=gpu:2"),
    ("-p", "gpu", "--gres=shard:8"),
    ("-p", "npu", "--gres=npu:910b:1"),
    ("-p", "gpu", "--cpus-per-task=2"),
)
USER = "carol"


class Bench:
    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.env = {**os.environ, **lab.cfg.env()}
        self.shape = 0

    def run(self, *argv: str) -> str:
        done = subprocess.run(argv, capture_output=True, text=True, env=self.env, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")
        return done.stdout

    def state(self, job_id: int) -> str:
        return self.run("squeue", "-h", "-j", str(job_id), "-o", "%T").strip()

    def one(self) -> tuple[float, bool]:
        """Seconds from sbatch to RUNNING for the next shape, and whether it was pinned."""
        opts = SHAPES[self.shape % len(SHAPES)]
        self.shape += 1
        t0 = time.monotonic()
        out = self.run(
            "runuser", "-u", USER, "--", "sbatch", "--parsable", "--time=5",
            "--output=/dev/null", f"--chdir={self.lab.cfg.jobs}", *opts, "--wrap", "sleep 120",
        )  # fmt: skip
        job_id = int(out.split(";")[0])
        try:
            while self.state(job_id) != "RUNNING":
                if time.monotonic() - t0 > 60:
                    raise RuntimeError(f"job {job_id} did not start within 60 s")
                time.sleep(0.02)
            took = time.monotonic() - t0
            pinned = bool(self.run("squeue", "-h", "-j", str(job_id), "-o", "%n").strip())
        finally:
            self.run("scancel", str(job_id))
            self.gone(job_id)
        return took, pinned

    def gone(self, job_id: int) -> None:
        """Until the job has ended and is no longer completing (or has left the queue)."""
        deadline = time.monotonic() + 60
        argv = ("squeue", "-h", "-j", str(job_id), "-t", "all", "-o", "%T")
        while True:
            done = subprocess.run(argv, capture_output=True, text=True, env=self.env, check=False)
            if done.returncode != 0 or done.stdout.strip() in ("", "CANCELLED", "COMPLETED"):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"job {job_id} is still there after 60 s")
            time.sleep(0.05)

    def fresh(self, want: bool) -> None:
        """Until the hook sees the heartbeat as ``want`` (it looks once a second)."""
        beat = placement.heartbeat(self.lab)
        deadline = time.monotonic() + 30
        while True:
            alive = beat.exists() and time.time() - beat.stat().st_mtime < 3
            if alive == want:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the heartbeat did not become {'fresh' if want else 'stale'}")
            time.sleep(0.1)
        time.sleep(1.1)


def summary(xs: list[float]) -> dict[str, float]:
    qs = statistics.quantiles(xs, n=10, method="inclusive") if len(xs) > 1 else [xs[0]] * 9
    return {
        "n": len(xs),
        "median": round(statistics.median(xs), 3),
        "p90": round(qs[8], 3),
        "max": round(max(xs), 3),
        "within_1s": round(sum(x <= 1.0 for x in xs) / len(xs), 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=4, help="blocks of each mode, alternating")
    ap.add_argument("--per", type=int, default=10, help="jobs per block")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    lab = Lab()
    if not lab.is_up():
        raise SystemExit("the lab is not up: run `aipool lab up` first")
    bench = Bench(lab)
    times: dict[str, list[float]] = {"daemon": [], "slurm": []}
    pinned = {"daemon": 0, "slurm": 0}
    started = time.monotonic()
    for _ in range(args.blocks):
        with placement.daemon(lab):
            bench.fresh(True)
            for _ in range(args.per):
                took, pin = bench.one()
                times["daemon"].append(took)
                pinned["daemon"] += pin
        placement.heartbeat(lab).unlink(missing_ok=True)
        bench.fresh(False)
        for _ in range(args.per):
            took, pin = bench.one()
            times["slurm"].append(took)
            pinned["slurm"] += pin
    result = {
        "with_daemon": summary(times["daemon"]),
        "slurm_alone": summary(times["slurm"]),
        "ratio_of_medians": round(
            statistics.median(times["daemon"]) / statistics.median(times["slurm"]), 2
        ),
        "wall_seconds": round(time.monotonic() - started, 1),
        "pinned": pinned,
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return
    for name, mode in (("with the placement daemon", "daemon"), ("Slurm alone", "slurm")):
        s = summary(times[mode])
        print(
            f"{name:26s}: median {s['median']:.3f} s, p90 {s['p90']:.3f} s, max {s['max']:.3f} s,"
            f" {s['within_1s']:.0%} within 1 s ({s['n']} jobs, {pinned[mode]} pinned)"
        )
    print(f"ratio of medians (daemon / Slurm alone): {result['ratio_of_medians']}")
    print(f"{result['wall_seconds']} s wall")


if __name__ == "__main__":
    main()
