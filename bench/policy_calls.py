"""Slurm calls per policy cycle: the first cycle writes, a cycle where nothing changed must
write nothing (target: 0 writes).

Offline (default): the 10,000-job / 1,000-node snapshot of ``policy_plan.py``, planned and
applied through the real client with a recording runner; after each cycle the snapshot is
advanced as if Slurm had done what was asked, and the clock moves on by ``--interval``.
The baseline is the first cycle, which has everything to write.

Lab (``--lab N``): N pending jobs on the real lab (``aipool lab up`` first), the real
daemon, counting the argv of every command it runs per cycle.

    .venv/bin/python bench/policy_calls.py [--cycles 5] [--interval 30]
    .venv/bin/python bench/policy_calls.py --lab 500
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from policy_plan import FULL, _policies, cluster

from slurm_plugins.client import SlurmClient
from slurm_plugins.client.runner import Completed, RecordingRunner, ReplayRunner
from slurm_plugins.policy.apply import apply
from slurm_plugins.policy.engine import EngineConfig, build_policies, plan
from slurm_plugins.policy.plan import Action, Plan
from slurm_plugins.policy.snapshot import Snapshot

_WRITE_VERBS = {"update", "hold", "release", "requeue", "requeuehold", "reconfigure"}


def is_write(argv: Sequence[str]) -> bool:
    if argv[0] in ("scancel", "sbatch"):
        return True
    if argv[0] == "sacctmgr":
        return "-i" in argv
    # a bare `scontrol` reads its job updates on stdin
    return argv[0] == "scontrol" and (len(argv) == 1 or bool(_WRITE_VERBS & set(argv[1:3])))


def _ok(argv: Sequence[str], stdin: str | None) -> Completed:
    return Completed(tuple(argv), 0, "", "")


def as_slurm_did(s: Snapshot, p: Plan, dt: float) -> Snapshot:
    """The next snapshot had Slurm carried out ``p`` (and nothing else happened)."""
    held = {h.job_id for h in p.holds} | {a.job_id for a in p.actions_of(Action.REQUEUE_HOLD)}
    freed = {h.job_id for h in p.releases}
    gone = {a.job_id for a in p.actions_of(Action.CANCEL)}
    back = {a.job_id for a in p.actions if a.action in (Action.REQUEUE, Action.REQUEUE_HOLD)}
    ch = {c.job_id: c for c in p.job_changes}
    jobs = []
    for j in s.jobs:
        if j.job_id in gone:
            continue
        if j.job_id in back:
            j = replace(j, state="PENDING", nodes=(), cards=(), start=None)  # noqa: PLW2901
        c = ch.get(j.job_id)
        if c is not None and c.exc_nodes is not None:
            j = replace(j, excluded_nodes=tuple(filter(None, c.exc_nodes.split(","))))  # noqa: PLW2901
        if c is not None and c.req_nodes is not None:
            j = replace(j, required_nodes=tuple(filter(None, c.req_nodes.split(","))))  # noqa: PLW2901
        if c is not None and c.qos is not None and j.pending:
            j = replace(j, qos=c.qos)  # noqa: PLW2901
        if j.job_id in held:
            j = replace(j, held=True, reason="JobHeldAdmin")  # noqa: PLW2901
        if j.job_id in freed:
            j = replace(j, held=False, reason="Priority")  # noqa: PLW2901
        jobs.append(j)
    weights = {w.node: w.weight for w in p.node_weights}
    nodes = tuple(replace(n, weight=weights.get(n.name, n.weight)) for n in s.nodes)
    return replace(s, jobs=tuple(jobs), nodes=nodes, state=p.state, now=s.now + dt)


def series(cycles: int, interval: float) -> list[tuple[int, int]]:
    """(write calls, update lines) of each cycle, Slurm doing what was asked in between."""
    snap = cluster(1000, 10_000)
    config = EngineConfig(policies=_policies(FULL))
    pols = build_policies(config)
    out = []
    for _ in range(cycles):
        runner = RecordingRunner(ReplayRunner({("scontrol",): _ok, ("scancel",): _ok}))
        p = plan(snap, config, pols)
        res = apply(p, SlurmClient(runner), old_state=snap.state)
        out.append((res.calls, sum(len((stdin or "").splitlines()) for _, stdin in runner.calls)))
        snap = as_slurm_did(snap, p, interval)
    return out


def offline(cycles: int, interval: float) -> None:
    names = ", ".join(p.name for p in _policies(FULL))
    print(f"offline: 10000 pending, 1000 nodes, policies {names}")
    for label, dt in (
        ("clock stopped (nothing changed)", 0.0),
        (f"{interval:g} s apart", interval),
    ):
        runs = series(cycles, dt)
        shown = ", ".join(f"{c} ({n} lines)" for c, n in runs)
        print(f"{label}: write calls per cycle: {shown}")
    print("baseline: cycle 1 (everything new); target: 0 writes when nothing changed")


def lab(n: int, cycles: int) -> None:
    from aipool.lab.cluster import Lab
    from slurm_plugins.client.runner import SubprocessRunner
    from slurm_plugins.policy.config import parse_config
    from slurm_plugins.policy.daemon import Daemon

    the_lab = Lab()
    if not the_lab.is_up():
        raise SystemExit("the lab is not up: run `aipool lab up` first")
    env = the_lab.cfg.env()
    plain = SlurmClient(env=env)
    prefix = f"bc{uuid.uuid4().hex[:6]}-"
    ids = []
    try:
        for i in range(n):
            ids.append(
                plain.submit(
                    "#!/bin/bash\ntrue\n",
                    [
                        f"--job-name={prefix}{i}",
                        "-p",
                        "cpu",
                        "--begin=now+1hour",
                        "--output=/dev/null",
                        f"--qos={('low', 'normal', 'high')[i % 3]}",
                    ],
                )
            )
        rec = RecordingRunner(SubprocessRunner(env))
        with tempfile.TemporaryDirectory() as tmp:
            cfg = parse_config(
                {
                    "state_dir": str(Path(tmp) / "state"),
                    "select": {"name_prefix": prefix},
                    "policies": [
                        {"name": "priority", "weight": 2},
                        {"name": "fair"},
                        {"name": "gang"},
                    ],
                }
            )
            d = Daemon(cfg, SlurmClient(rec, timeout=120))
            for k in range(cycles):
                rec.calls.clear()
                t0 = time.perf_counter()
                d.cycle()
                took = time.perf_counter() - t0
                reads = [a[0] for a, _ in rec.calls if not is_write(a)]
                writes = [a for a, _ in rec.calls if is_write(a)]
                print(
                    f"cycle {k + 1}: {len(reads)} reads ({', '.join(reads)}), "
                    f"{len(writes)} writes, {took:.2f} s"
                )
    finally:
        if ids:
            plain.cancel(ids)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cycles", type=int, default=5)
    ap.add_argument("--interval", type=float, default=30.0)
    ap.add_argument("--lab", type=int, metavar="N", help="N pending jobs on the lab instead")
    args = ap.parse_args()
    if args.lab:
        lab(args.lab, args.cycles)
    else:
        offline(args.cycles, args.interval)


if __name__ == "__main__":
    main()
