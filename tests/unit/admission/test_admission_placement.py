"""The hook and the placement daemon: jobs wait for the daemon's pin only while it beats.

The daemon touches a heartbeat file beside the table; while it is fresh, a GPU or NPU job is
given a begin time ``defer`` seconds ahead (and tagged), which the daemon clears when it has
pinned the job. A lapsed heartbeat, a missing one or no lua-posix leaves jobs to Slurm.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from slurm_plugins.admission.config import LAB_POLICY, PolicyConfig, PolicyError, parse_policy
from slurm_plugins.admission.render import TABLE_FILE
from slurm_plugins.admission.table import build_table
from tests.unit.admission.luarun import NO_VAL, install, run, submit

BEAT = "placement-daemon.alive"
LAPSE, DEFER = 10, 20
NOW = 1_800_000_000


def raw_policy(**placement: Any) -> dict[str, Any]:
    raw: dict[str, Any] = copy.deepcopy(yaml.safe_load(LAB_POLICY.read_text()))
    raw["cluster"]["placement"] = {"heartbeat": BEAT, "lapse": LAPSE, "defer": DEFER, **placement}
    return raw


def placed() -> PolicyConfig:
    return parse_policy(raw_policy())


def touch(hook: Path, mtime: int) -> dict[str, Any]:
    return {"op": "touch", "path": str(hook.parent / BEAT), "mtime": mtime}


def at(clock: int, step: dict[str, Any]) -> dict[str, Any]:
    return {**step, "clock": clock}


GPU = {"tres_per_node": "gres:gpu:1"}


def test_a_fresh_heartbeat_defers_gpu_work_and_tags_it(tmp_path: Path) -> None:
    hook = install(tmp_path / "etc", placed())
    gpu, shard, npu, root, cpu_on_gpu = run(
        hook,
        [
            touch(hook, NOW - 3),
            at(NOW, submit("gpu", "carol", **GPU)),
            at(NOW, submit("shard", "alice", tres_per_node="gres:shard:8")),
            at(NOW, submit("npu", "bob", tres_per_node="gres:npu:910b:2")),
            at(NOW, submit("root", "root", **GPU)),
            at(NOW, submit("cpu on gpu nodes", "carol")),
        ],
    )
    for out in (gpu, shard, npu, root, cpu_on_gpu):
        assert out.accepted, out.message
        assert out.set["begin_time"] == NOW + DEFER, out.name
        assert out.set["admin_comment"].endswith(",placement=deferred"), out.name
    assert npu.set["partition"] == "npu"  # routed, then deferred: npu is a placed partition
    assert "priority" not in gpu.set  # a hold would need the daemon to release it
    assert any("placement daemon is running" in line for line in gpu.info)


def test_a_lapsed_or_missing_heartbeat_leaves_jobs_to_slurm(tmp_path: Path) -> None:
    hook = install(tmp_path / "etc", placed())
    missing, lapsed, fresh, lapsed_again = run(
        hook,
        [
            at(NOW, submit("missing", "carol", **GPU)),
            touch(hook, NOW + 1 - LAPSE - 1),
            at(NOW + 1, submit("lapsed", "carol", **GPU)),
            touch(hook, NOW + 2),
            at(NOW + 2, submit("fresh", "carol", **GPU)),
            at(NOW + 3 + LAPSE, submit("lapsed again", "carol", **GPU)),
        ],
    )
    assert "begin_time" not in missing.set
    assert "begin_time" not in lapsed.set
    assert "placement" not in lapsed.set["admin_comment"]
    assert fresh.set["begin_time"] == NOW + 2 + DEFER
    assert "begin_time" not in lapsed_again.set
    assert any("heartbeat lapsed: Slurm places jobs itself" in i for i in lapsed_again.info)


def test_the_heartbeat_is_looked_at_once_a_second(tmp_path: Path) -> None:
    hook = install(tmp_path / "etc", placed())
    before, same_second, next_second = run(
        hook,
        [
            at(NOW, submit("before", "carol", **GPU)),
            touch(hook, NOW),
            at(NOW, submit("same second", "carol", **GPU)),
            at(NOW + 1, submit("next second", "carol", **GPU)),
        ],
    )
    assert "begin_time" not in before.set
    assert "begin_time" not in same_second.set
    assert next_second.set["begin_time"] == NOW + 1 + DEFER


@pytest.mark.parametrize(
    ("name", "fields"),
    [
        ("held by its user", {"priority": 0}),
        ("a priority of its own", {"priority": 5000}),
        ("a dependency", {"dependency": "afterok:12"}),
        ("an array", {"array_inx": "1-10"}),
        ("a heterogeneous component", {"het_job_offset": 1}),
        ("a switch count", {"req_switch": 1, "wait4switch": 600}),
        ("a begin time ahead", {"begin_time": NOW + 3600}),
        ("the CPU partition", {"partition": "cpu", "tres_per_node": None}),
    ],
)
def test_jobs_the_daemon_cannot_start_pinned_are_not_deferred(
    tmp_path: Path, name: str, fields: dict[str, Any]
) -> None:
    hook = install(tmp_path / "etc", placed())
    (out,) = run(hook, [touch(hook, NOW), at(NOW, submit(name, "alice", **{**GPU, **fields}))])
    assert out.accepted, out.message
    assert "begin_time" not in out.set
    assert "placement" not in out.set["admin_comment"]


def test_a_begin_time_already_past_and_unset_numbers_still_defer(tmp_path: Path) -> None:
    hook = install(tmp_path / "etc", placed())
    past, unset = run(
        hook,
        [
            touch(hook, NOW),
            at(NOW, submit("past", "carol", begin_time=NOW - 5, **GPU)),
            at(
                NOW,
                submit(
                    "unset",
                    "carol",
                    priority=NO_VAL,
                    het_job_offset=NO_VAL,
                    req_switch=NO_VAL,
                    **GPU,
                ),
            ),
        ],
    )
    assert past.set["begin_time"] == NOW + DEFER
    assert unset.set["begin_time"] == NOW + DEFER


def test_a_refused_job_is_refused_not_deferred(tmp_path: Path) -> None:
    hook = install(tmp_path / "etc", placed())
    (out,) = run(
        hook, [touch(hook, NOW), at(NOW, submit("too big", "carol", tres_per_node="gres:gpu:8"))]
    )
    assert not out.accepted
    assert out.set == {}


def test_without_lua_posix_the_heartbeat_cannot_be_seen_so_nothing_waits(tmp_path: Path) -> None:
    hook = install(tmp_path / "etc", placed())
    (out,) = run(hook, [touch(hook, NOW), at(NOW, submit("gpu", "carol", **GPU))], no_posix=True)
    assert out.accepted
    assert "begin_time" not in out.set


def test_without_placement_in_the_policy_nothing_waits(tmp_path: Path) -> None:
    raw = raw_policy()
    del raw["cluster"]["placement"]
    hook = install(tmp_path / "etc", parse_policy(raw))
    (out,) = run(hook, [touch(hook, NOW), at(NOW, submit("gpu", "carol", **GPU))])
    assert "begin_time" not in out.set
    assert "placement" not in build_table(parse_policy(raw))


def test_the_table_lists_the_accelerator_partitions(tmp_path: Path) -> None:
    table = build_table(placed())
    assert table["placement"] == {
        "heartbeat": BEAT,
        "lapse": LAPSE,
        "defer": DEFER,
        "partitions": {"gpu": True, "npu": True},
    }
    install(tmp_path / "etc", placed())
    assert "placement-daemon.alive" in (tmp_path / "etc" / TABLE_FILE).read_text()


@pytest.mark.parametrize(
    ("placement", "message"),
    [
        ({"heartbeat": "../alive"}, "cluster.placement.heartbeat"),
        ({"lapse": 0}, "cluster.placement.lapse"),
        ({"defer": 7200}, "cluster.placement.defer"),
        ({"every": 3}, "cluster.placement.every"),
    ],
)
def test_placement_settings_are_checked(placement: dict[str, Any], message: str) -> None:
    with pytest.raises(PolicyError) as err:
        parse_policy(raw_policy(**placement))
    assert any(m.startswith(message) for m in err.value.messages), err.value.messages
