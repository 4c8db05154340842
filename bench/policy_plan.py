"""Planning time of one policy cycle, pending jobs x nodes: 10k/1k, 100k/1k, 10k/10k and
100k/10k (targets: 10k on 10k <= 0.5 s, 100k on 10k <= 2 s, all policies).

A synthetic but busy cluster (GPU nodes with whole-card and shard jobs, NPU and CPU nodes,
ten tenants in two cohorts, gangs and anti-affinity groups, two weeks of usage history, 1 %
of the pending jobs just submitted and deferred by the admission hook for the placement
daemon to pin) is planned with every built-in policy. The baseline, measured in the same
run, is the same snapshot planned with ``fifo`` alone. Two cycles each: the first after a
restart (every SiteFactor to write, every reason to word) and the next one, as the daemon
runs them (its state from the first; what was deferred is deferred still, so pinned anew).

    .venv/bin/python bench/policy_plan.py [--sizes 10000x1000,100000x10000] [--runs 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import replace

from gres.naming import DEFAULT_SHARDS_PER_GPU
from slurm_plugins.policy.engine import EngineConfig, PolicyConfig, build_policies, plan
from slurm_plugins.policy.resources import Amounts, Demand
from slurm_plugins.policy.snapshot import (
    CardUse,
    JobInfo,
    NodeInfo,
    Snapshot,
    Tenant,
    UsageRecord,
)

NOW = 1_800_000_000.0
SPG = DEFAULT_SHARDS_PER_GPU
ACCOUNTS = [f"acct{i}" for i in range(10)]

#: Every policy, as a site would run them (placement and the like join when present).
FULL = (
    PolicyConfig("fifo", 1),
    PolicyConfig("priority", 2),
    PolicyConfig("fair", 2),
    PolicyConfig("capacity", 3),
    PolicyConfig("gang", 0),
)


def _policies(names: Sequence[PolicyConfig]) -> tuple[PolicyConfig, ...]:
    from slurm_plugins.policy.base import REGISTRY

    extra = [PolicyConfig(n, 0) for n in ("affinity", "reschedule", "idle", "placement")]
    return tuple(names) + tuple(p for p in extra if p.name in REGISTRY)


def cluster(nodes: int, pending: int, seed: int = 1) -> Snapshot:  # noqa: PLR0915
    rng = random.Random(seed)  # noqa: S311 (benchmark data, not secrets)
    n_gpu, n_npu = int(nodes * 0.7), int(nodes * 0.2)
    infos: list[NodeInfo] = []
    jobs: list[JobInfo] = []
    jid = 1

    def user() -> tuple[str, str]:
        a = rng.choice(ACCOUNTS)
        return f"u{rng.randrange(40)}", a

    for i in range(nodes):
        name = f"n{i:04d}"
        if i < n_gpu:
            used, cpus = [0] * 8, 0
            for card in range(8):
                r = rng.random()
                if r < 0.55:
                    used[card] = SPG
                elif r < 0.8:
                    used[card] = rng.choice([4, 8, 16, 24])
            for card, u in enumerate(used):
                if not u:
                    continue
                u_name, acct = user()
                shards = 0 if u == SPG else u
                demand = Demand(4, 16000, 0 if shards else 1, "a100", shards)
                jobs.append(
                    JobInfo(
                        jid,
                        u_name,
                        acct,
                        "gpu",
                        rng.choice(["normal", "low", "high"]),
                        "RUNNING",
                        NOW - rng.uniform(1e3, 2e5),
                        start=NOW - rng.uniform(10, 1e5),
                        demand=demand,
                        nodes=(name,),
                        cards=(CardUse(name, card, u),),
                    )
                )
                jid += 1
                cpus += 4
            infos.append(
                NodeInfo(
                    name,
                    "MIXED",
                    partitions=("gpu",),
                    features=("a100",),
                    cpus=64,
                    alloc_cpus=cpus,
                    mem_mb=512_000,
                    alloc_mem_mb=cpus * 4000,
                    gpu_type="a100",
                    gpus=8,
                    card_used=tuple(used),
                )
            )
        elif i < n_gpu + n_npu:
            busy = rng.randrange(0, 9)
            if busy:
                u_name, acct = user()
                jobs.append(
                    JobInfo(
                        jid,
                        u_name,
                        acct,
                        "npu",
                        "normal",
                        "RUNNING",
                        NOW - 5e4,
                        start=NOW - 3e4,
                        demand=Demand(8, 32000, npus=busy, npu_type="910b"),
                        nodes=(name,),
                    )
                )
                jid += 1
            infos.append(
                NodeInfo(
                    name,
                    "MIXED",
                    partitions=("npu",),
                    features=("910b",),
                    cpus=64,
                    alloc_cpus=8 if busy else 0,
                    mem_mb=512_000,
                    npus={"910b": 8},
                    npus_used={"910b": busy},
                )
            )
        else:
            infos.append(NodeInfo(name, "IDLE", partitions=("cpu",), cpus=64, mem_mb=256_000))
    for k in range(pending):
        u_name, acct = user()
        r = rng.random()
        labels: dict[str, str] = {}
        if r < 0.35:
            part, demand = "gpu", Demand(4, 16000, rng.choice([1, 1, 2, 4, 8]), "a100")
        elif r < 0.6:
            part, demand = "gpu", Demand(2, 8000, shards=rng.choice([4, 8, 16]))
        elif r < 0.85:
            part, demand = "npu", Demand(8, 32000, npus=rng.choice([1, 2, 4, 8]), npu_type="910b")
        else:
            part, demand = "cpu", Demand(rng.choice([1, 4, 16]), 8000)
        if k % 50 == 0:
            labels = {"gang": f"g{k // 150}", "gang_size": "3"}
        elif k % 50 == 1:
            labels = {"anti_affinity": f"aa{k % 7}"}
        fresh = k % 100 == 2 and part != "cpu"  # just submitted: the hook deferred it
        jobs.append(
            JobInfo(
                jid,
                u_name,
                acct,
                part,
                rng.choice(["normal", "normal", "low", "high"]),
                "PENDING",
                NOW - (rng.uniform(0, 2) if fresh else rng.uniform(0, 3e5)),
                reason="BeginTime" if fresh else "Priority",
                demand=demand,
                labels=labels,
                held="gang" in labels,
                deferred=fresh,
            )
        )
        jid += 1
    usage = tuple(
        UsageRecord(
            rng.choice(ACCOUNTS),
            f"u{rng.randrange(40)}",
            end - rng.uniform(600, 4e4),
            end,
            Amounts(rng.choice([0, 1, 2, 8]), rng.choice([0, 0, 4]), 8, 64),
        )
        for end in (NOW - rng.uniform(0, 14 * 86400) for _ in range(20_000))
    )
    tenants = tuple(
        Tenant(
            a,
            cohort="c0" if i < 5 else "c1",
            nominal={"gpu": n_gpu * 8 / 10, "npu": n_npu * 8 / 10},
            borrowing_limit={"gpu": n_gpu * 8 / 10},
        )
        for i, a in enumerate(ACCOUNTS)
    )
    return Snapshot(now=NOW, jobs=tuple(jobs), nodes=tuple(infos), usage=usage, tenants=tenants)


def timed(snap: Snapshot, config: EngineConfig, runs: int) -> dict[str, float]:
    """Median CPU seconds of a first cycle and of the next (CPU time is steadier than wall
    time on a shared host), and the changes of the first."""
    pols = build_policies(config)
    first, second, changes, pins = [], [], 0, 0
    for _ in range(runs):
        c0 = time.process_time()
        p = plan(snap, config, pols)
        first.append(time.process_time() - c0)
        nxt = replace(snap, state=p.state)
        c0 = time.process_time()
        plan(nxt, config, pols)
        second.append(time.process_time() - c0)
        changes = len(p.job_changes) + len(p.holds) + len(p.releases) + len(p.actions)
        pins = sum(1 for c in p.job_changes if c.req_nodes)
    return {
        "first": statistics.median(first),
        "next": statistics.median(second),
        "changes": changes,
        "pins": pins,
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--sizes",
        default="10000x1000,100000x1000,10000x10000,100000x10000",
        help="pending x nodes, comma-separated",
    )
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    targets = {(10_000, 10_000): 0.5, (100_000, 10_000): 2.0}
    full_cfg = EngineConfig(policies=_policies(FULL))
    print("all policies:", ", ".join(p.name for p in full_cfg.policies))
    print(
        "| pending x nodes | fifo alone (next / first) | all policies (next / first) "
        "| ratio (next) | pins | target |"
    )
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    ok = True
    for size in args.sizes.split(","):
        pending, nodes = (int(x) for x in size.split("x"))
        snap = cluster(nodes, pending)
        base = timed(snap, EngineConfig(policies=(PolicyConfig("fifo"),)), args.runs)
        full = timed(snap, full_cfg, args.runs)
        target = targets.get((pending, nodes))
        met = "" if target is None else ("met" if full["next"] <= target else "MISSED")
        ok = ok and met != "MISSED"
        print(
            f"| {pending:,} x {nodes:,} "
            f"| {base['next'] * 1000:.0f} / {base['first'] * 1000:.0f} ms "
            f"| {full['next'] * 1000:.0f} / {full['first'] * 1000:.0f} ms "
            f"| {full['next'] / base['next']:.1f}x | {full['pins']} "
            f"| {'' if target is None else f'<= {target:g} s: {met}'} |",
            flush=True,
        )
    print("targets met" if ok else "a target was MISSED")


if __name__ == "__main__":
    main()
