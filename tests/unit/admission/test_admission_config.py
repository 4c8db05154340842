"""Policy files: the lab's is valid and matches the lab tenants; errors name their field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from aipool.lab.config import DEFAULT_TENANTS
from aipool.lab.tenants import load_tenants
from slurm_plugins.admission.config import (
    LAB_POLICY,
    Kind,
    PolicyError,
    PriorityClass,
    load_policy,
    parse_minutes,
    parse_policy,
)

MINIMAL: dict[str, Any] = {
    "version": 1,
    "cluster": {"default_partition": "gpu"},
    "pools": {"gpu": {"kind": "gpu", "partitions": ["gpu"], "shared": True}},
    "tenants": {"nlp": {"domain": "research"}},
}


def errors_of(**changes: Any) -> list[str]:
    raw = copy.deepcopy(MINIMAL)
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = raw
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    with pytest.raises(PolicyError) as info:
        parse_policy(raw)
    return list(info.value.messages)


def test_lab_policy_loads() -> None:
    cfg = load_policy(LAB_POLICY)
    assert cfg.cluster.default_partition == "gpu"
    assert {p.name: p.kind for p in cfg.pools} == {
        "gpu": Kind.GPU,
        "npu": Kind.NPU,
        "cpu": Kind.CPU,
    }
    cs101 = cfg.tenant("cs101")
    assert cs101.domain == "teaching"
    assert cs101.shard_sizes == (4, 8, 16, 32)
    assert cs101.limits.time_min == 240
    assert cs101.limits.default_time_min == 60
    assert cfg.tenant("nlp").limits.time_min == 3 * 24 * 60


def test_lab_policy_matches_the_lab_tenants() -> None:
    """Same accounts and users; each user's classes are exactly the QOS Slurm lets them use."""
    tenants = load_tenants(DEFAULT_TENANTS)
    cfg = load_policy(LAB_POLICY)
    projects = {a.name for a in tenants.accounts if a.parent != "root"}
    assert {t.account for t in cfg.tenants} == projects
    domains = {a.name: a.parent for a in tenants.accounts}
    for t in cfg.tenants:
        assert domains[t.account] == t.domain
    users = {u.name: u for u in cfg.users}
    assert set(users) == {u.name for u in tenants.users}
    for spec in tenants.users:
        user = users[spec.name]
        if user.unrestricted:
            continue
        tenant = cfg.tenant(user.tenant or "")
        assert tenant.account == spec.account
        classes = user.classes or tenant.classes
        assert {c.qos for c in classes} == set(spec.qos), spec.name


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        (90, 90),
        ("90", 90),
        ("1:30", 2),  # minutes:seconds, rounded up like Slurm
        ("4:00:00", 240),
        ("1-12", 36 * 60),
        ("2-00:30", 48 * 60 + 30),
        ("3-00:00:00", 4320),
    ],
)
def test_slurm_times(text: object, minutes: int) -> None:
    assert parse_minutes(text) == minutes


@pytest.mark.parametrize("bad", ["", "1h", "1:2:3:4", "-5", 0, "0:00", True, "1-"])
def test_bad_times(bad: object) -> None:
    with pytest.raises(ValueError, match="must be"):
        parse_minutes(bad)


ERRORS = [
    ({"colour": "red"}, "colour: Unknown field."),
    ({"version": 2}, "version: Must be equal to 1."),
    ({"cluster__shards_per_gpu": 0}, "cluster.shards_per_gpu: Must be greater than or equal to 1"),
    ({"cluster__fractions": {"910b_vir05": 1.5}}, "cluster.fractions.910b_vir05: Must be greater"),
    ({"pools__gpu__kind": "tpu"}, "pools.gpu.kind: Must be one of: gpu, npu, cpu, accel."),
    ({"pools__gpu__partitions": []}, "pools.gpu.partitions: Shorter than minimum length 1."),
    (
        {"pools__bad name": {"kind": "gpu", "partitions": ["x"]}},
        "pools.bad name (name): must be 1-64",
    ),
    ({"tenants__nlp__limits": {"time": "1h"}}, "tenants.nlp.limits.time: must be a Slurm time"),
    ({"tenants__nlp__limits": {"gpus": -1}}, "tenants.nlp.limits.gpus: Must be greater"),
    ({"tenants__nlp__classes": ["urgent"]}, "tenants.nlp.classes[0]: Must be one of"),
    ({"tenants__nlp__shard_sizes": [8, "x"]}, "tenants.nlp.shard_sizes[1]: Not a valid integer."),
    ({"tenants__nlp__budget": 3}, "tenants.nlp.budget: Unknown field."),
    ({"users__alice": {"tenant": "nlp", "root": True}}, "users.alice.root: Unknown field."),
    ({"tenants__nlp__default_class": "high"}, "tenants.nlp.default_class: high is not in classes"),
    ({"tenants__nlp__pools": ["gone"]}, "tenants.nlp.pools[0]: unknown pool gone"),
    ({"tenants__nlp__shard_sizes": [8, 33]}, "tenants.nlp.shard_sizes: 33 does not fit on one GPU"),
    (
        {"tenants__nlp__limits": {"time": 60, "default_time": 90}},
        "tenants.nlp.limits.default_time: longer than limits.time",
    ),
    ({"cluster__default_partition": "debug"}, "cluster.default_partition: debug is in no pool"),
    (
        {"pools__more": {"kind": "gpu", "partitions": ["gpu"]}},
        "pools.more.partitions: gpu is already in pool gpu",
    ),
    (
        {"tenants__cv": {"domain": "research", "account": "nlp"}},
        "tenants.cv.account: nlp is already",
    ),
    ({"users__bob": {"tenant": "vision"}}, "users.bob.tenant: unknown tenant vision"),
    (
        {"users__root": {"unrestricted": True, "tenant": "nlp"}},
        "users.root: an unrestricted user takes no tenant or classes",
    ),
    (
        {"users__alice": {"tenant": "nlp", "classes": ["high"]}},
        "users.alice.classes: must include medium, tenant nlp's default",
    ),
    ({"cluster__gres": {"gpu": "gpu", "shard": "npu"}}, "cluster.gres.shard: shards are shares"),
]


@pytest.mark.parametrize(("changes", "message"), ERRORS, ids=[e[1].split(":")[0] for e in ERRORS])
def test_errors_name_their_field(changes: dict[str, Any], message: str) -> None:
    errors = errors_of(**changes)
    assert any(message in e for e in errors), errors


def test_missing_required_parts() -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy({"version": 1})
    assert sorted(info.value.messages) == [
        "cluster: Missing data for required field.",
        "pools: Missing data for required field.",
        "tenants: Missing data for required field.",
    ]
    with pytest.raises(PolicyError, match="must be a mapping"):
        parse_policy(["version", 1])


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="No such file"):
        load_policy(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: [1\n")
    with pytest.raises(PolicyError, match="not valid YAML"):
        load_policy(bad)


def test_defaults() -> None:
    raw = copy.deepcopy(MINIMAL)
    raw["tenants"]["nlp"]["limits"] = {"time": "2:00:00"}
    cfg = parse_policy(yaml.safe_load(yaml.safe_dump(raw)))
    nlp = cfg.tenant("nlp")
    assert nlp.account == "nlp"
    assert nlp.classes == (PriorityClass.MEDIUM, PriorityClass.LOW)
    assert nlp.default_class is PriorityClass.MEDIUM
    assert nlp.shard_sizes is None
    assert nlp.limits.default_time_min == 120  # no default: the limit itself
    assert cfg.cluster.shards_per_gpu == 32
    assert cfg.cluster.gres == {"gpu": Kind.GPU, "npu": Kind.NPU, "shard": Kind.GPU}
    assert PriorityClass.MEDIUM.qos == "normal"
