"""The rendered hook under lua5.1, case by case: what it accepts, rewrites and refuses (why)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from slurm_plugins.admission.table import build_table
from tests.unit.admission.luarun import (
    INFINITE,
    Outcome,
    install,
    lab_policy,
    run,
    submit,
)

DIGEST = build_table(lab_policy())["digest"]
USERS = ("root", "alice", "bob", "carol", "dave")
#: Requests the shared lab's other tests and demos make as any demo user: all must pass.
PLAIN: dict[str, dict[str, Any]] = {
    "whole gpu": {"tres_per_node": "gres:gpu:a100:1"},
    "whole gpu in gpu": {"partition": "gpu", "tres_per_node": "gres:gpu:a100:1"},
    "half card": {"tres_per_node": "gres:shard:16"},
    "quarter card": {"partition": "gpu", "tres_per_node": "gres:shard:8", "req_nodes": "gpu2"},
    "eighth card": {"tres_per_node": "gres:shard:4"},
    "two npus": {"partition": "npu", "tres_per_node": "gres:npu:910b:2"},
    "three npus": {"partition": "npu", "tres_per_node": "gres:npu:910b:3"},
    "vnpu quarters": {"tres_per_node": "gres:npu:910b_vir05:2"},
    "vnpu on npu2": {"partition": "npu", "tres_per_node": "gres:npu:910b_vir05:2"},
    "cpu": {"partition": "cpu", "time_limit": 3},
    "low": {"partition": "cpu", "qos": "low"},
    "held": {"partition": "cpu", "priority": 0},
    "begin later": {"partition": "cpu", "begin_time": 1_900_000_000},
    "array": {"partition": "cpu", "array_inx": "1-500"},
    "no request at all": {},
}
HIGH = {"partition": "gpu", "tres_per_node": "gres:shard:8", "qos": "high"}


@pytest.fixture(scope="module")
def hook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tmp_path_factory.mktemp("hook") / "etc")


@pytest.fixture(scope="module")
def plain_outcomes(hook: Path) -> dict[tuple[str, str], Outcome]:
    steps = [submit(f"{u}/{n}", u, **fields) for u in USERS for n, fields in PLAIN.items()]
    steps += [submit(f"{u}/high", u, **HIGH) for u in ("root", "alice")]
    outcomes = {}
    for o in run(hook, steps):
        user, _, request = o.name.partition("/")
        outcomes[(user, request)] = o
    return outcomes


@pytest.mark.parametrize(
    ("user", "request_name"),
    [(u, n) for u in USERS for n in PLAIN] + [("root", "high"), ("alice", "high")],
)
def test_plain_requests_pass(
    plain_outcomes: dict[tuple[str, str], Outcome], user: str, request_name: str
) -> None:
    out = plain_outcomes[(user, request_name)]
    assert out.accepted, out.message
    assert not out.errors
    assert "priority" not in out.set  # P12: setting it would release a held job
    assert "nice" not in out.set


def test_defaults_and_tag_of_a_course_job(hook: Path) -> None:
    (out,) = run(hook, [submit("c", "carol", tres_per_node="gres:shard:8")])
    assert out.accepted
    assert out.set == {
        "account": "cs101",
        "qos": "normal",
        "partition": "gpu",
        "time_limit": 60,
        "admin_comment": f"aipool:tenant=cs101,domain=teaching,class=medium,policy={DIGEST}",
    }


def test_root_is_tagged_never_checked(hook: Path) -> None:
    steps = [
        submit("any gres", "root", partition="gpu", tres_per_node="gres:gpu:h100:1"),
        submit("shard too big", "root", tres_per_node="gres:shard:40", time_limit=INFINITE),
        submit("as nlp", "root", account="nlp", qos="high", comment="aipool:anti_affinity=g7"),
        submit("bad group", "root", default_qos="low", comment="aipool:group=a b"),
    ]
    a, b, c, d = run(hook, steps)
    assert all(o.accepted for o in (a, b, c, d))
    assert a.set == {"admin_comment": f"aipool:policy={DIGEST}"}
    assert c.set == {
        "admin_comment": f"aipool:tenant=nlp,domain=research,class=high,group=g7,policy={DIGEST}"
    }
    assert d.set == {"admin_comment": f"aipool:class=low,policy={DIGEST}"}


REWRITES = [
    ("npu job routed", "bob", {"tres_per_node": "gres:npu:910b:2"}, {"partition": "npu"}),
    ("gpu job routed", "bob", {"tres_per_job": "gres:gpu:2"}, {"partition": "gpu"}),
    ("cpu job keeps default", "bob", {}, {"partition": None}),
    ("medium is normal", "alice", {"qos": "medium"}, {"qos": "normal"}),
    ("normal stays", "alice", {"qos": "normal"}, {"qos": None}),
    ("own account kept", "alice", {"account": "vision", "qos": "high"}, {"account": None}),
    ("time given kept", "bob", {"time_limit": 30}, {"time_limit": None}),
    ("research default time", "bob", {}, {"time_limit": 1440}),
    ("unlisted user by account", "frank", {"default_account": "nlp"}, {"account": "nlp"}),
]


@pytest.mark.parametrize(
    ("name", "user", "fields", "expect"), REWRITES, ids=[r[0] for r in REWRITES]
)
def test_rewrites(
    hook: Path, name: str, user: str, fields: dict[str, Any], expect: dict[str, Any]
) -> None:
    (out,) = run(hook, [submit(name, user, **fields)])
    assert out.accepted, out.message
    for key, value in expect.items():
        assert out.set.get(key) == value, (key, out.set)


def test_tag_names_tenant_of_the_account_and_the_group(hook: Path) -> None:
    comment = "aipool:name=train,anti_affinity=ring-1,topology=ddp"
    (a, b) = run(
        hook,
        [
            submit("a", "alice", account="vision", qos="high", comment=comment),
            submit("b", "bob", comment="aipool: group = g_2 ,name=x"),
        ],
    )
    assert a.set["admin_comment"] == (
        f"aipool:tenant=vision,domain=research,class=high,group=ring-1,policy={DIGEST}"
    )
    assert b.set["admin_comment"].startswith("aipool:tenant=vision,domain=research,class=medium,")
    assert ",group=g_2," in b.set["admin_comment"]
    assert "comment" not in a.set  # the user's comment stays theirs


REFUSALS = [
    (
        "shard size of the course",
        "carol",
        {"tres_per_node": "gres:shard:6"},
        "shard:6 is not a size tenant cs101 may use: ask for 4, 8, 16 or 32 shards (of 32 per GPU)",
    ),
    (
        "shards beyond one card",
        "alice",
        {"tres_per_node": "gres:shard:40"},
        "shard:40 does not fit on one GPU: a job gets at most 32 shards (a whole card) per node",
    ),
    ("no shard at all", "alice", {"tres_per_node": "gres:shard:0"}, "shard:0 is not a share"),
    (
        "npu on the gpu partition",
        "carol",
        {"partition": "gpu", "tres_per_node": "gres:npu:910b:1"},
        "partition gpu holds GPUs, but this job asks for NPUs; submit it with -p npu",
    ),
    (
        "gpu on the npu partition",
        "bob",
        {"partition": "npu", "tres_per_job": "gres:gpu:1"},
        "partition npu holds NPUs, but this job asks for GPUs; submit it with -p gpu",
    ),
    (
        "shard on the cpu partition",
        "bob",
        {"partition": "cpu", "tres_per_node": "gres:shard:8"},
        "partition cpu holds no accelerators, but this job asks for GPUs; submit it with -p gpu",
    ),
    (
        "one partition of two is wrong",
        "bob",
        {"partition": "gpu,cpu", "tres_per_node": "gres:gpu:1"},
        "partition cpu holds no accelerators",
    ),
    (
        "unknown partition",
        "bob",
        {"partition": "debug"},
        "partition debug is in no pool of the admission policy; "
        "tenant vision may use gpu, npu and cpu",
    ),
    (
        "high for a student",
        "carol",
        {"qos": "high"},
        "priority class high (--qos=high) is not open to tenant cs101; "
        "use --qos=normal or --qos=low",
    ),
    (
        "unknown qos",
        "alice",
        {"qos": "scavenger"},
        "QOS scavenger is not a priority class; "
        "user alice may use --qos=high, --qos=normal or --qos=low",
    ),
    (
        "too many gpus over nodes",
        "carol",
        {"min_nodes": 2, "tres_per_node": "gres:gpu:a100:4"},
        "this job asks for 8 GPUs in all; tenant cs101 may use at most 4 per job",
    ),
    (
        "too many gpus per task",
        "carol",
        {"num_tasks": 5, "tres_per_task": "gres:gpu:1"},
        "this job asks for 5 GPUs in all",
    ),
    (
        "too many gpus per job",
        "bob",
        {"tres_per_job": "gres:gpu:a100:9"},
        "this job asks for 9 GPUs in all; tenant vision may use at most 8 per job",
    ),
    (
        "vnpus count as shares",
        "dave",
        {"tres_per_node": "gres:npu:910b_vir05:33"},
        "this job asks for 8.25 NPUs in all; tenant cs101 may use at most 8 per job",
    ),
    (
        "over the time limit",
        "carol",
        {"time_limit": 300},
        "time limit 5:00:00 is over the 4:00:00 tenant cs101 allows per job",
    ),
    (
        "unlimited time",
        "bob",
        {"time_limit": INFINITE},
        "time limit UNLIMITED is over the 3-00:00:00 tenant vision allows per job",
    ),
    (
        "account of no tenant",
        "carol",
        {"account": "physics"},
        "account physics is not a tenant of the admission policy",
    ),
    (
        "user without an account",
        "eve",
        {"default_account": None},
        "user eve has no Slurm account; ask your tenant administrator to add you",
    ),
    (
        "bad anti-affinity group",
        "bob",
        {"comment": "aipool:anti_affinity=a;b"},
        "the anti-affinity group in --comment must be 1-64 letters",
    ),
]


@pytest.mark.parametrize(
    ("name", "user", "fields", "message"), REFUSALS, ids=[r[0] for r in REFUSALS]
)
def test_refusals_say_why(
    hook: Path, name: str, user: str, fields: dict[str, Any], message: str
) -> None:
    (out,) = run(hook, [submit(name, user, **fields)])
    assert not out.accepted
    assert out.user == [out.user[0]]
    assert out.user[0].startswith("aipool: ")
    assert message in out.user[0]
    assert out.set == {}  # a refused job is not touched


def test_vnpus_within_the_limit_pass(hook: Path) -> None:
    (out,) = run(hook, [submit("v", "dave", tres_per_node="gres:npu:910b_vir05:32")])
    assert out.accepted, out.message


def test_every_problem_is_named_at_once(hook: Path) -> None:
    (out,) = run(
        hook,
        [
            submit(
                "x",
                "carol",
                qos="high",
                partition="gpu",
                tres_per_node="gres:shard:6",
                time_limit=600,
            )
        ],
    )
    assert not out.accepted
    msg = out.user[0]
    assert msg.count("; ") >= 3
    for part in ("priority class high", "shard:6", "time limit 10:00:00"):
        assert part in msg


def test_percent_signs_reach_the_user_verbatim(hook: Path) -> None:
    (out,) = run(hook, [submit("p", "carol", account="100%s%d")])
    assert out.user == [
        "aipool: account 100%s%d is not a tenant of the admission policy; "
        "submit with --account set to one of your projects"
    ]


def test_pass_through_table_admits_everything_untouched(tmp_path: Path) -> None:
    hook = install(tmp_path / "etc", pass_through=True)
    outs = run(
        hook,
        [
            submit("a", "carol", qos="high", tres_per_node="gres:shard:6"),
            submit("b", "eve", default_account=None),
        ],
    )
    assert all(o.accepted and o.set == {} for o in outs)


def test_dear_fields_are_read_only_when_needed(hook: Path) -> None:
    """user_name costs slurmctld a password-database lookup, default_account an association
    lookup: the first is kept per uid for a minute, the second read only as a fallback."""
    first, second, unlisted = run(
        hook,
        [
            {**submit("first", "carol", tres_per_node="gres:shard:8"), "clock": 100},
            {**submit("second", "carol", tres_per_node="gres:shard:8"), "clock": 150},
            {**submit("unlisted", "frank", default_account="nlp"), "clock": 150},
        ],
    )
    assert first.reads.get("user_name") == 1
    assert "user_name" not in second.reads
    assert "default_account" not in first.reads
    assert "default_qos" not in first.reads
    assert unlisted.reads.get("default_account") == 1
    assert max(first.reads.values()) == 1  # every field at most once


def test_a_renamed_uid_is_seen_after_a_minute(hook: Path) -> None:
    as_bob = {"user_name": "bob", "default_account": "vision"}
    a, b, c = run(
        hook,
        [
            {**submit("a", "carol"), "clock": 100},
            {**submit("b", "carol", **as_bob), "clock": 159},
            {**submit("c", "carol", **as_bob), "clock": 161},
        ],
    )
    assert "tenant=cs101" in a.set["admin_comment"]
    assert "tenant=cs101" in b.set["admin_comment"]  # same uid, name kept for a minute
    assert "tenant=vision" in c.set["admin_comment"]


def test_a_profiling_table_logs_the_hooks_time(tmp_path: Path) -> None:
    hook = install(tmp_path / "etc", profile=2)
    a, b, c = run(hook, [submit(n, "carol", tres_per_node="gres:shard:8") for n in "abc"])
    assert a.accepted
    assert b.accepted
    assert not [m for m in a.info if "hook time" in m]
    (line,) = [m for m in b.info if "hook time" in m]
    assert line.startswith("aipool: hook time over 2 submissions: mean ")
    assert a.set == c.set  # timing changes nothing else
    with pytest.raises(ValueError, match="profile"):
        build_table(lab_policy(), profile=0)


def test_shards_above_one_card_pass_where_slurm_takes_them_from_several_cards(
    tmp_path: Path,
) -> None:
    """Rendered for Slurm 24.11 (``MULTIPLE_SHARING_GRES_PJ``), shard:40 is 1.25 cards and
    passes; the policy can still say no for its site, and other shard checks stay."""
    steps = [
        submit("one and a quarter", "alice", tres_per_node="gres:shard:40"),
        submit("no shard", "alice", tres_per_node="gres:shard:0"),
    ]
    across, zero = run(install(tmp_path / "24.11", release=(24, 11)), steps)
    assert across.accepted, across.message
    assert not zero.accepted
    assert "shard:0 is not a share" in zero.message
    (old,) = run(install(tmp_path / "22.05", release=(22, 5)), steps[:1])
    assert not old.accepted
    assert "shard:40 does not fit on one GPU" in old.message
    policy = lab_policy()
    no = replace(policy, cluster=replace(policy.cluster, shards_across_cards=False))
    (site,) = run(install(tmp_path / "site", no, release=(24, 11)), steps[:1])
    assert not site.accepted
    assert "does not fit on one GPU" in site.message
