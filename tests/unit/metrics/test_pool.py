"""Pool metrics from the one capacity computation, on the recorded lab cluster."""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction as F
from pathlib import Path

from slurm_plugins.client import parse
from slurm_plugins.client.capacity import of_nodes
from slurm_plugins.client.models import Gres, Job, JobState, Node, NodeState, Tres
from slurm_plugins.policy.poolmetrics import PoolView, pool_families, queue_families
from tests.unit.metrics.scheme import check_scheme, values

DATA = Path(__file__).resolve().parents[2] / "data" / "slurm" / "22.05"
SUBMIT = datetime(2026, 11, 29, 20, 7, 12, tzinfo=UTC).timestamp()


def _view(now: float = SUBMIT + 100) -> PoolView:
    nodes = parse.nodes((DATA / "sinfo.json").read_text())
    jobs = parse.jobs((DATA / "squeue.json").read_text())
    return PoolView("lab", nodes, jobs, now)


def test_cards_per_node_partition_and_pool_on_the_recorded_lab() -> None:
    fam = check_scheme(pool_families(_view()))
    # gpu1: 2 whole cards + 8 shards on card 2; gpu2: 32 shards on card 0; npu1: 3 of 8
    assert values(fam["aipool_node_cards"], kind="gpu", state="used") == {
        ("lab", "a100", "gpu1"): 2.25,
        ("lab", "a100", "gpu2"): 1.0,
    }
    assert values(fam["aipool_pool_cards"], kind="gpu") == {
        ("lab", "a100", "free"): 4.75,
        ("lab", "a100", "unavailable"): 0.0,
        ("lab", "a100", "used"): 3.25,
    }
    assert values(fam["aipool_pool_cards"], kind="npu", state="used") == {("lab", "910b"): 3.0}
    assert values(fam["aipool_partition_free_whole_cards"], partition="gpu") == {
        ("lab", "gpu", "a100"): 4.0
    }
    assert values(fam["aipool_pool_slices"], type="shard") == {
        ("lab", "gpu", "a100", "free"): 152.0,
        ("lab", "gpu", "a100", "unavailable"): 64.0,
        ("lab", "gpu", "a100", "used"): 40.0,
    }
    assert values(fam["aipool_pool_nodes"]) == {("lab", "available"): 4, ("lab", "unavailable"): 0}


def test_the_figures_are_the_capacity_modules_own() -> None:
    view = _view()
    pool = of_nodes(view.nodes).gpus
    fam = check_scheme(pool_families(view))
    free = values(fam["aipool_pool_cards"], kind="gpu", state="free")
    assert free == {("lab", "a100"): float(pool.cards.free)}


def test_fragmentation_is_free_capacity_on_cards_in_use() -> None:
    fam = check_scheme(pool_families(_view()))
    # card 2 of gpu1 has 24 of its 32 shards free: 0.75 card no whole-card job can have
    assert values(fam["aipool_pool_stranded_cards"]) == {
        ("lab", "gpu", "a100"): 0.75,
        ("lab", "npu", "910b"): 0.0,
    }
    ratio = values(fam["aipool_pool_fragmentation_ratio"])
    assert ratio[("lab", "gpu", "a100")] == float(F(3, 4) / F(19, 4))


def test_vnpus_are_slices_and_count_as_their_share() -> None:
    node = Node(
        "npu9",
        NodeState.MIXED,
        gres=(Gres("npu", "910b", 2), Gres("npu", "910b_vir05", 4)),
        partitions=("npu",),
        tres_used=Tres({"gres/npu:910b_vir05": 2}),
    )
    fam = check_scheme(pool_families(PoolView("c", [node], [], 0.0)))
    assert values(fam["aipool_node_cards"], state="used") == {("c", "npu", "910b", "npu9"): 0.5}
    assert values(fam["aipool_node_slices"], type="910b_vir05") == {
        ("c", "npu", "910b", "npu9", "free"): 2.0,
        ("c", "npu", "910b", "npu9", "unavailable"): 0.0,
        ("c", "npu", "910b", "npu9", "used"): 2.0,
    }


def test_queues_and_waits_per_partition_qos_and_tenant() -> None:
    fam = check_scheme(pool_families(_view(), tenant_of=lambda a: {"physics": "phys"}.get(a, a)))
    assert values(fam["aipool_jobs"], partition="gpu") == {
        ("lab", "normal", "pending", "phys"): 1,
        ("lab", "normal", "pending", "root"): 3,
        ("lab", "normal", "running", "root"): 5,
    }
    assert values(fam["aipool_jobs_pending_waited_seconds"], partition="gpu") == {
        ("lab", "normal", "phys"): 100.0,
        ("lab", "normal", "root"): 300.0,
    }
    assert values(fam["aipool_jobs_pending_longest_wait_seconds"], partition="npu") == {
        ("lab", "normal", "root"): 100.0
    }


def test_finished_jobs_do_not_count_and_an_unread_view_has_nothing() -> None:
    done = Job(1, "x", "u", "a", "p", "normal", JobState.COMPLETED, submit_time=None)
    fams = {f.name: f for f in queue_families("c", [done], 0.0)}
    assert fams["aipool_jobs"].samples == []
    assert pool_families(None) == []


def test_running_jobs_waits_are_their_submission_to_start() -> None:
    at = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)

    def running(job_id: int, waited_s: int | None, qos: str = "normal") -> Job:
        start = at.timestamp() + (waited_s or 0)
        return Job(
            job_id, "x", "u", "nlp", "gpu", qos, JobState.RUNNING,
            submit_time=at,
            start_time=datetime.fromtimestamp(start, UTC) if waited_s is not None else None,
        )  # fmt: skip

    jobs = [running(1, 30), running(2, 90), running(3, None), running(4, 600, "high")]
    fam = check_scheme(queue_families("lab", jobs, at.timestamp() + 3600))
    assert values(fam["aipool_jobs_running_waited_seconds"], tenant="nlp") == {
        ("lab", "gpu", "high"): 600.0,
        ("lab", "gpu", "normal"): 120.0,  # the job without a start time adds nothing
    }
    assert values(fam["aipool_jobs"], qos="normal", state="running") == {("lab", "gpu", "nlp"): 3}
