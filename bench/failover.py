"""Controller failover timer on a lab with backup controllers (`aipool lab up --controllers 3`).

For each run, with a queue of held jobs in place:

* crash: SIGKILL the primary; time until a client command (``squeue``) is answered again —
  by a backup, which takes over after ``SlurmctldTimeout`` without the primary;
* stop: SIGTERM the primary (it saves its state first); the same measurement;
* takeover: ``scontrol takeover`` (planned maintenance) until a command is answered;
* return: start the primary again until it answers ``scontrol ping`` and commands work.

After each step the queue must be exactly what it was (no job lost). Baseline: a client
command with the primary in control, measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from aipool.lab.cluster import Lab
from slurm_plugins.client import JobUpdate, SlurmClient, SlurmError

HELD = "#!/bin/bash\nsleep 60\n"


def answered(client: SlurmClient, since: float) -> tuple[float, set[int]]:
    """Seconds from ``since`` until ``squeue`` answers, and the job ids it lists."""
    while True:
        try:
            jobs = client.jobs()
        except SlurmError:  # the client's own retries ran out: keep asking
            time.sleep(0.05)
            continue
        return time.monotonic() - since, {j.job_id for j in jobs}


def settle(lab: Lab, client: SlurmClient, job_id: int, value: int) -> None:
    """Change a pending job and wait until the controller in charge has written its state."""
    mark = time.time()
    client.update_jobs([JobUpdate(job_id, site_factor=value)])
    lab.wait_state_saved(mark)


def primary_back(lab: Lab, client: SlurmClient) -> tuple[float, list[int]]:
    """Start the primary; seconds until it answers, and the controllers that had to be healed
    (a backup stuck handing control back: the primary takes over after ~30 s anyway)."""
    t0 = time.monotonic()
    lab.start_controller(1)
    while True:
        try:
            if client.controllers()[0].up:
                break
        except SlurmError:
            pass
        time.sleep(0.05)
    took = answered(client, t0)[0]
    return took, lab.heal_controllers()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=50, help="held jobs kept in the queue")
    args = ap.parse_args()
    lab = Lab()
    if lab.cfg.controllers < 2 or not lab.is_up():
        raise SystemExit("needs a lab with backups: `aipool lab up --controllers 3`")
    client = SlurmClient(env=lab.cfg.env(), timeout=120)
    ids = {client.submit(HELD, ["--hold", "--partition=cpu", "--output=/dev/null"])}
    if args.jobs > 1:
        ids |= {
            client.submit(HELD, ["--hold", "--partition=cpu", "--output=/dev/null"])
            for _ in range(args.jobs - 1)
        }
    try:
        # slurmctld writes its job state asynchronously (a few seconds after a change): jobs
        # accepted just before a crash are lost with it, so wait for the write first
        save_lag = lab.wait_state_saved(time.time())
        base = []
        for _ in range(20):
            t0 = time.monotonic()
            client.jobs()
            base.append(time.monotonic() - t0)
        baseline = statistics.median(base)
        results: dict[str, list[float]] = {"crash": [], "stop": [], "takeover": [], "return": []}
        steps: dict[str, Callable[[], object]] = {
            "crash": lambda: lab.stop_controller(1, crash=True),
            "stop": lambda: lab.stop_controller(1),
            "takeover": lambda: client.takeover(1),
        }
        stuck: list[str] = []
        for run in range(args.runs):
            for name, act in steps.items():
                if name == "crash":  # everything is on disk before the crash
                    settle(lab, client, min(ids), run * 10 + 9)
                t0 = time.monotonic()
                act()
                while lab.controller_running(1):  # takeover: the primary saves state, exits
                    time.sleep(0.02)
                took, seen = answered(client, t0)
                if seen != ids:
                    raise SystemExit(f"run {run + 1} {name}: jobs lost: {sorted(ids - seen)}")
                results[name].append(took)
                # the backup now in charge must have settled before the primary comes back
                settle(lab, client, min(ids), run * 10 + len(results[name]))
                back, healed = primary_back(lab, client)
                results["return"].append(back)
                if healed:
                    stuck.append(f"run {run + 1} after {name}: healed controller(s) {healed}")
            line = "  ".join(f"{k}={v[-1]:.2f}s" for k, v in results.items())
            print(f"run {run + 1}: {line}  (no job lost: {len(ids)} jobs)")
    finally:
        client.cancel(sorted(ids))
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"SlurmctldTimeout: {lab.cfg.ctld_timeout} s; {args.runs} runs; {len(ids)} jobs kept")
    print(f"job state on disk after the last submit: {save_lag:.2f} s")
    print(f"baseline squeue, primary in control:     {baseline * 1000:.1f} ms")
    for name, label in (
        ("crash", "failover after a crash (SIGKILL)"),
        ("stop", "failover after a stop (SIGTERM)"),
        ("takeover", "planned takeover (scontrol takeover)"),
        ("return", "primary back in control"),
    ):
        print(f"{label + ':':<41}{med[name]:.2f} s  ({med[name] / baseline:.0f}x baseline)")
    print(f"ratio planned takeover / crash failover: {med['takeover'] / med['crash']:.2f}")
    returns = len(results["return"])
    print(f"returns with a backup stuck handing back control: {len(stuck)} of {returns}")
    for line in stuck:
        print(f"  {line}")


if __name__ == "__main__":
    main()
