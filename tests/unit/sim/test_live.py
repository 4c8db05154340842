"""``--rules live``: the simulator places each task exactly where the policy daemon would.

Task by task, the live simulator's choice is checked against the real engine: a snapshot of
the virtual cluster as the collector would report it (nodes with their cards in use, the
running jobs, the new task waiting with the hook's deferral), planned by
``slurm_plugins.policy.engine.plan`` with the ``placement`` policy, its pin read back. The
daemon's state (its kept task model) goes from one plan to the next, as in the daemon.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from gres.placement import MILLI, Request
from sim.cluster import SHARDS, Cluster
from sim.fgd import ranked_nodes, task_sequence
from sim.live import LivePlacer, job_of, run_live
from sim.runner import LIVE, Job, run_matrix, summarise
from sim.trace import NodeSpec, Task
from slurm_plugins.policy.engine import EngineConfig, PolicyConfig, plan
from slurm_plugins.policy.resources import Demand
from slurm_plugins.policy.snapshot import CardUse, DaemonState, JobInfo, NodeInfo, Snapshot

SPG = SHARDS.units
ENGINE = EngineConfig(policies=(PolicyConfig("placement", args={"node_weights": False}),))


def synthetic(seed: int = 7) -> tuple[list[NodeSpec], list[Task]]:
    """A dozen nodes of two models and a mixed queue: shares, whole and multi-card tasks,
    CPU-only work, and tasks held to one or two GPU models."""
    rng = random.Random(seed)  # noqa: S311 - test data
    nodes = [
        NodeSpec(f"n{i:02d}", 32_000 if i % 3 else 64_000, 131_072, 4 if i % 2 else 8, m)
        for i, m in enumerate(["A100"] * 6 + ["V100"] * 6)
    ]
    tasks = []
    for k in range(160):
        r = rng.random()
        cpu = rng.choice([1_000, 2_500, 4_000, 8_000, 12_000])
        mem = rng.choice([2_048, 8_192, 16_384])
        models = rng.choice([(), (), ("A100",), ("V100",), ("A100", "V100")])
        if r < 0.45:
            req = Request(cpu, mem, rng.choice([100, 250, 330, 500, 750]), 1, models)
        elif r < 0.8:
            req = Request(cpu, mem, MILLI, rng.choice([1, 1, 2, 4, 8]), models)
        else:
            req = Request(cpu, mem)
        tasks.append(Task(f"t{k:03d}", req))
    return nodes, tasks


def snapshot(cluster: Cluster, running: list[tuple[int, JobInfo]], new: JobInfo) -> Snapshot:
    infos = []
    for i, spec in enumerate(cluster.specs):
        free = cluster.gpu_free[i, : spec.gpu_count]
        infos.append(
            NodeInfo(
                spec.name,
                "MIXED",
                partitions=("gpu",),
                features=(spec.gpu_model,),
                cpus=spec.cpu_milli // 1000,
                alloc_cpus=(spec.cpu_milli - int(cluster.cpu_free[i])) // 1000,
                mem_mb=spec.mem_mib,
                alloc_mem_mb=spec.mem_mib - int(cluster.mem_free[i]),
                gpu_type=spec.gpu_model,
                gpus=spec.gpu_count,
                card_used=tuple(int(SPG - f) for f in free),
            )
        )
    return Snapshot(now=1e9, jobs=(*(j for _, j in running), new), nodes=tuple(infos))


def job_info(job_id: int, task: Task, *, node: str = "", cards: tuple[int, ...] = ()) -> JobInfo:
    live = job_of(task.request)
    r = task.request
    shards = math.ceil(r.gpu_milli * SPG / MILLI) if r.is_fractional else 0
    gpus = r.gpu_count if not r.is_fractional else 0
    single = r.gpu_models[0] if len(r.gpu_models) == 1 else None
    demand = Demand(live.request.cpu_milli // 1000, r.mem_mib, gpus, single, shards)
    features = "|".join(r.gpu_models) if len(r.gpu_models) > 1 else ""
    base = JobInfo(job_id, "u", "a", "gpu", "normal", "PENDING", 1e9 - 1, demand=demand)
    if node:
        used = shards or SPG
        return replace(
            base,
            state="RUNNING",
            nodes=(node,),
            cards=tuple(CardUse(node, c, used) for c in cards),
            features=features,
        )
    return replace(base, reason="BeginTime", deferred=True, features=features)


@pytest.mark.parametrize("seed", [42, 43])
def test_every_task_lands_where_the_daemon_pins_it(seed: int) -> None:
    nodes, tasks = synthetic()
    cluster = Cluster(ranked_nodes(nodes, seed), SHARDS)
    sequence = task_sequence(tasks, cluster.gpu_count * MILLI, seed, 1.3)
    placer = LivePlacer(cluster)
    state = DaemonState()
    running: list[tuple[int, JobInfo]] = []
    failed = 0
    for k, task in enumerate(sequence):
        new = job_info(k, task)
        p = plan(replace(snapshot(cluster, running, new), state=state), ENGINE)
        state = p.state
        (change,) = p.job_changes
        assert change.start_now
        live = job_of(task.request)
        placer.seen(live)
        got = placer.place(live)
        if got is None:
            assert change.req_nodes is None, f"task {k}: the daemon pinned what fits nowhere"
            placer.seen(live, -1)
            failed += 1
            continue
        node, cards = cluster.names[got[0]], got[1]
        assert change.req_nodes == node, f"task {k} ({task.request}): {node} vs the daemon's"
        running.append((k, job_info(k, task, node=node, cards=cards)))
    assert failed > 0  # the run went past full: the check covered the crowded end too
    assert len(running) >= 50


def test_the_runner_runs_live_and_ideal_side_by_side() -> None:
    nodes, tasks = synthetic()
    batched = replace(LIVE, batch=4, order="largest")
    jobs = [Job("aipool", s, v) for v in (LIVE, batched) for s in (1, 2)]
    results = run_matrix(nodes, tasks, jobs, workers=1)
    rows = summarise(results)
    assert [r.variant.label for r in rows] == ["live", "live, 4 a cycle, largest first"]
    for r in rows:
        assert 0 < r.requested_130 <= r.alloc_130 <= 100  # shards round shares up
    single = run_live(nodes, tasks, 1)
    assert repr(single.curve) == repr(results[0][1].curve)  # deterministic (nan where empty)


def test_a_task_becomes_the_job_slurm_would_hold() -> None:
    j = job_of(Request(2_500, 4_096, 330, 1, ("A100", "V100")))
    assert j.request == Request(3_000, 4_096, 343, 1, ("A100", "V100"))  # 11 shards of 32
    assert j.counted.gpu_models == ()  # a constraint, not a GRES type: the model sees none
    assert job_of(Request(1_000, 1_024, MILLI, 2, ("T4",))).counted.gpu_models == ("T4",)


def test_a_live_replay_pins_work_at_its_submission() -> None:
    from sim import replay
    from sim.trace import load_nodes, load_tasks
    from tests.unit.sim.conftest import DATA

    nodes, tasks = load_nodes(DATA / "nodes.csv"), load_tasks(DATA / "pods.csv")
    setup = replay.ReplaySetup(load=2.0, node_fraction=1.0, tenant_count=2, rules="live")
    live = replay.run_replay(nodes, tasks, "fifo", setup)
    assert live["rules"] == "live"
    assert live["unstarted"] == 0  # none lost: what was not pinned started by Weight
    assert 0 < live["pinned_by_daemon"] <= len(tasks)
    assert live["cycles"] >= len(tasks)  # a cycle at every submission
    ideal = replay.run_replay(nodes, tasks, "fifo", replace(setup, rules="ideal"))
    assert ideal["cycles"] < live["cycles"]
