"""The first level's cluster choice: capacity of the kind, tenants, data locality, strategy."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_plugins.client.models import Gres, Node, NodeState, Tres
from slurm_plugins.federation import (
    ClusterSnapshot,
    FederationPolicy,
    NoClusterFits,
    NodeFree,
    PolicyError,
    Request,
    load_policy,
    pick_cluster,
)
from slurm_plugins.federation.model import Kind, request_for
from slurm_plugins.federation.policy import Locality, Strategy, parse_policy
from slurm_plugins.federation.snapshot import node_free


def gpu_node(name: str, free: int, total: int = 4, cpus: int = 16) -> NodeFree:
    return NodeFree(
        name,
        cpus=cpus,
        gpus={"a100": free},
        shards={"a100": free * 32},
        total_cpus=16,
        total_gpus={"a100": total},
        total_shards={"a100": total * 32},
    )


def cpu_node(name: str, free: int = 16) -> NodeFree:
    return NodeFree(name, cpus=free, total_cpus=16)


def snap(name: str, *nodes: NodeFree, **kw: object) -> ClusterSnapshot:
    return ClusterSnapshot(name, nodes=nodes, **kw)  # type: ignore[arg-type]


A100_2 = Request(Kind.GPU, 2, "a100", account="nlp")


def test_the_cluster_with_room_of_the_kind_wins() -> None:
    full_a = snap("a", gpu_node("gpu1", 0), gpu_node("gpu2", 1), cpu_node("cpu1"))
    roomy_b = snap("b", gpu_node("bgpu1", 4), cpu_node("bcpu1", 0))
    d = pick_cluster(A100_2, [full_a, roomy_b], FederationPolicy())
    assert d.cluster == "b"
    assert d.starts_now
    assert d.reasons["b"] == "chosen: room now (4 free)"
    assert d.reasons["a"].startswith("full now")
    # a CPU job goes where the CPUs are free, whatever the GPUs do
    cpu = Request(Kind.CPU, 0, cpus=8)
    assert pick_cluster(cpu, [full_a, roomy_b], FederationPolicy()).cluster == "a"


def test_spread_pack_and_ordered() -> None:
    a = snap("a", gpu_node("gpu1", 4), gpu_node("gpu2", 4))
    b = snap("b", gpu_node("bgpu1", 2))
    assert pick_cluster(A100_2, [a, b], FederationPolicy(Strategy.SPREAD)).cluster == "a"
    assert pick_cluster(A100_2, [a, b], FederationPolicy(Strategy.PACK)).cluster == "b"
    ordered = parse_policy({"strategy": "ordered", "clusters": [{"name": "b"}, {"name": "a"}]})
    assert pick_cluster(A100_2, [a, b], ordered).cluster == "b"


def test_nowhere_free_queues_on_the_shortest_queue() -> None:
    a = snap("a", gpu_node("gpu1", 0), pending=5)
    b = snap("b", gpu_node("bgpu1", 1), pending=1)
    d = pick_cluster(A100_2, [a, b], FederationPolicy())
    assert d.cluster == "b"
    assert not d.starts_now
    assert d.reasons["a"] == "full now, 5 pending"


def test_tenants_allowed_clusters_and_associations() -> None:
    a = snap("a", gpu_node("gpu1", 4))
    b = snap("b", gpu_node("bgpu1", 4), accounts=frozenset({"cs101"}))
    policy = parse_policy({"clusters": [{"name": "a"}, {"name": "b"}], "tenants": {"cs101": ["b"]}})
    cs101 = Request(Kind.GPU, 1, account="cs101")
    assert pick_cluster(cs101, [a, b], policy).cluster == "b"
    with pytest.raises(NoClusterFits) as info:
        pick_cluster(A100_2, [snap("b", gpu_node("bgpu1", 4), accounts=frozenset({"x"}))], policy)
    assert "b: account nlp has no association there" in str(info.value)
    d = pick_cluster(cs101, [a, b], policy)
    assert d.reasons["a"] == "account cs101 may not use it (policy)"


def test_data_locality_prefer_and_require() -> None:
    a = snap("a", gpu_node("gpu1", 4), gpu_node("gpu2", 4))
    b = snap("b", gpu_node("bgpu1", 2), labels=frozenset({"imagenet"}))
    req = Request(Kind.GPU, 1, "a100", data="imagenet")
    assert pick_cluster(req, [a, b], FederationPolicy()).cluster == "b"
    # room now beats locality under `prefer` ...
    busy_b = snap("b", gpu_node("bgpu1", 0), labels=frozenset({"imagenet"}))
    assert pick_cluster(req, [a, busy_b], FederationPolicy()).cluster == "a"
    # ... and `require` waits for the data's cluster
    require = FederationPolicy(locality=Locality.REQUIRE)
    d = pick_cluster(req, [a, busy_b], require)
    assert d.cluster == "b"
    assert not d.starts_now
    assert d.reasons["a"] == "does not hold data imagenet"
    labels_from_policy = parse_policy(
        {"locality": "require", "clusters": [{"name": "a", "labels": ["imagenet"]}]}
    )
    assert pick_cluster(req, [a, b], labels_from_policy).cluster == "a"


def test_no_cluster_can_ever_run_it_says_why_per_cluster() -> None:
    a = snap("a", gpu_node("gpu1", 4))
    b = snap("b", reachable=False)
    with pytest.raises(NoClusterFits) as info:
        pick_cluster(Request(Kind.GPU, 8, "a100"), [a, b], FederationPolicy())
    msg = str(info.value)
    assert "a: has no node that can ever run gpu:a100 x8" in msg
    assert "b: not answering" in msg
    with pytest.raises(NoClusterFits, match="no clusters known"):
        pick_cluster(A100_2, [], FederationPolicy())


def test_multi_node_requests_need_enough_nodes_with_room() -> None:
    a = snap("a", gpu_node("gpu1", 4), gpu_node("gpu2", 0))
    b = snap("b", gpu_node("b1", 2), gpu_node("b2", 2))
    two_nodes = Request(Kind.GPU, 2, "a100", nodes=2)
    assert pick_cluster(two_nodes, [a, b], FederationPolicy()).cluster == "b"


def test_requests_are_validated() -> None:
    with pytest.raises(ValueError, match="count of 1 or more"):
        Request(Kind.GPU, 0)
    with pytest.raises(ValueError, match="cpus and nodes"):
        Request(Kind.CPU, 0, cpus=0)


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ({"strategy": "random"}, "strategy: Must be one of"),
        ({"colour": 1}, "colour: Unknown field"),
        ({"clusters": [{"name": "a"}, {"name": "a"}]}, "listed twice: a"),
        ({"clusters": [{"name": "a"}], "tenants": {"nlp": ["z"]}}, "tenants.nlp: unknown"),
        ({"tenants": {"nlp": []}}, "tenants.nlp: Shorter than minimum"),
    ],
)
def test_bad_policies_name_the_field(raw: dict[str, object], error: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(raw)
    assert error in str(info.value)


def test_policy_file(tmp_path: Path) -> None:
    path = tmp_path / "federation.yaml"
    path.write_text("strategy: pack\nclusters: [{name: a, labels: [imagenet]}]\n")
    policy = load_policy(path)
    assert policy.strategy is Strategy.PACK
    assert policy.labels["a"] == {"imagenet"}
    assert load_policy(None) == FederationPolicy()
    path.write_text("strategy: [")
    with pytest.raises(PolicyError, match="not valid YAML"):
        load_policy(path)
    with pytest.raises(PolicyError, match="cannot read"):
        load_policy(tmp_path / "missing.yaml")


def test_node_free_from_slurm_node() -> None:
    node = Node(
        "gpu1",
        NodeState.MIXED,
        cpus=16,
        alloc_cpus=3,
        gres=(Gres("gpu", "a100", 4), Gres("shard", "a100", 128)),
        tres_used=Tres({"gres/gpu:a100": 1, "gres/shard:a100": 40}),
    )
    free = node_free(node)
    # one whole card taken, 40 shards cover two more cards: one card left whole
    assert free.gpus == {"a100": 1}
    assert free.shards == {"a100": 128 - 40 - 32}
    assert free.cpus == 13
    assert free.total_gpus == {"a100": 4}
    drained = node_free(
        Node("gpu2", NodeState.IDLE, flags=frozenset({"DRAIN"}), cpus=16, gres=node.gres)
    )
    assert drained.gpus == {}
    assert drained.cpus == 0
    assert drained.total_gpus == {"a100": 4}


@pytest.mark.parametrize(
    ("gpus", "kind", "count"),
    [(0.25, Kind.SHARD, 8), (1.25, Kind.SHARD, 40), (2.0, Kind.GPU, 2), (1, Kind.GPU, 1)],
)
def test_a_share_that_is_not_whole_cards_asks_for_shards(
    gpus: float, kind: Kind, count: int
) -> None:
    req = request_for(gpus=gpus)
    assert (req.kind, req.count) == (kind, count)
