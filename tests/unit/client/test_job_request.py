"""JobRequest: its two wire forms agree field by field; a field a form cannot carry, or a value
no form may carry, is refused by name."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import pytest

from slurm_plugins.client.errors import JobRequestError
from slurm_plugins.client.job import (
    HET_SEPARATOR,
    Component,
    Dependency,
    Gres,
    JobRequest,
    OpenMode,
    Switches,
)

ENV = {"PATH": "/usr/bin:/bin"}
BASE = JobRequest((Component(),), environment=ENV)

# (field, value, sbatch options it adds, REST properties it adds); ``also`` fields a value needs
COMPONENT_CASES: list[tuple[str, Any, list[str], dict[str, Any]]] = [
    ("account", "nlp", ["--account=nlp"], {"account": "nlp"}),
    ("partition", "gpu", ["--partition=gpu"], {"partition": "gpu"}),
    ("qos", "high", ["--qos=high"], {"qos": "high"}),
    ("time_limit", 30, ["--time=30"], {"time_limit": 30}),
    ("nodes", 2, ["--nodes=2"], {"nodes": 2}),
    ("tasks", 4, ["--ntasks=4"], {"tasks": 4}),
    ("tasks_per_node", 2, ["--ntasks-per-node=2"], {"tasks_per_node": 2}),
    ("cpus_per_task", 8, ["--cpus-per-task=8"], {"cpus_per_task": 8}),
    ("memory_mb", 4096, ["--mem=4096M"], {"memory_per_node": 4096}),
    ("gres", (Gres("gpu", 2, "a100"),), ["--gres=gpu:a100:2"], {"gres": "gpu:a100:2"}),
    ("gres", (Gres("shard", 8),), ["--gres=shard:8"], {"gres": "shard:8"}),
    ("gres", (Gres("npu", 1, "910b"),), ["--gres=npu:910b:1"], {"gres": "npu:910b:1"}),
    ("constraint", "a100&ib", ["--constraint=a100&ib"], {"constraints": "a100&ib"}),
    ("nodelist", ("gpu1", "gpu[3-4]"), ["--nodelist=gpu1,gpu[3-4]"], {"nodelist": "gpu1,gpu[3-4]"}),
    ("exclude", ("gpu2",), ["--exclude=gpu2"], {"exclude_nodes": "gpu2"}),
    ("switches", Switches(2), ["--switches=2"], {"required_switches": 2}),
    (
        "switches",
        Switches(1, 90_061),
        ["--switches=1@1-1:01:01"],
        {"required_switches": 1, "wait_for_switch": 90_061},
    ),
    (
        "switches",
        Switches(1, 600),
        ["--switches=1@0:10:00"],
        {"required_switches": 1, "wait_for_switch": 600},
    ),
]
AFTER = (Dependency("afterok", 12), Dependency("afterany", 14), Dependency("afterok", 13))
JOB_CASES: list[tuple[str, Any, list[str], dict[str, Any]]] = [
    ("name", "train", ["--job-name=train"], {"name": "train"}),
    ("workdir", "/home/a/w", ["--chdir=/home/a/w"], {"current_working_directory": "/home/a/w"}),
    ("output", "/o/t-%j.out", ["--output=/o/t-%j.out"], {"standard_output": "/o/t-%j.out"}),
    ("open_mode", OpenMode.APPEND, ["--open-mode=append"], {"open_mode": "append"}),
    ("open_mode", OpenMode.TRUNCATE, ["--open-mode=truncate"], {"open_mode": "truncate"}),
    (
        "environment",
        {"PATH": "/opt/bin:/bin", "OMP_NUM_THREADS": "4"},
        ["--export=PATH=/opt/bin:/bin,OMP_NUM_THREADS=4"],
        {"environment": {"PATH": "/opt/bin:/bin", "OMP_NUM_THREADS": "4"}},
    ),
    ("requeue", True, ["--requeue"], {"requeue": True}),
    # slurmrestd 22.05 ignores ``requeue: false``; ``no_requeue`` is what it obeys
    ("requeue", False, ["--no-requeue"], {"no_requeue": True}),
    (
        "dependencies",
        AFTER,
        ["--dependency=afterok:12:13,afterany:14"],
        {"dependency": "afterok:12:13,afterany:14"},
    ),
    (
        "kill_on_invalid_dep",
        True,
        ["--kill-on-invalid-dep=yes"],
        {"kill_on_invalid_dependency": True},
    ),
    (
        "kill_on_invalid_dep",
        False,
        ["--kill-on-invalid-dep=no"],
        {"kill_on_invalid_dependency": False},
    ),
    ("mail_user", "a@example.org", ["--mail-user=a@example.org"], {"mail_user": "a@example.org"}),
    ("mail_type", ("END", "FAIL"), ["--mail-type=END,FAIL"], {"mail_type": "END,FAIL"}),
    ("begin", "now+1hour", ["--begin=now+1hour"], {"begin_time": "now+1hour"}),
    ("hold", True, ["--hold"], {"hold": True}),
    (
        "labels",
        {"name": "t", "gang": "g-1", "gang_size": "3"},
        ["--comment=aipool:name=t,gang=g-1,gang_size=3"],
        {"comment": "aipool:name=t,gang=g-1,gang_size=3"},
    ),
]
NEEDS = {"mail_type": {"mail_user": "a@example.org"}}


def with_field(name: str, value: Any) -> JobRequest:
    needs = dict(NEEDS.get(name, {}))
    if name in {f.name for f in fields(Component)}:
        return replace(BASE, components=(Component(**{name: value}),), **needs)
    return replace(BASE, **{name: value}, **needs)


def added(request: JobRequest) -> tuple[list[str], dict[str, Any]]:
    """What ``request`` has beyond BASE (and the fields a case needs), in each form."""
    argv = [a for a in request.to_argv() if a not in BASE.to_argv()]
    base = BASE.to_rest()["job"]
    rest = {k: v for k, v in request.to_rest()["job"].items() if base.get(k) != v}
    return argv, rest


@pytest.mark.parametrize(
    ("name", "value", "argv", "rest"),
    COMPONENT_CASES + JOB_CASES,
    ids=[f"{c[0]}={c[1]!r}"[:40] for c in COMPONENT_CASES + JOB_CASES],
)
def test_each_field_alone_is_one_option_and_one_property(
    name: str, value: Any, argv: list[str], rest: dict[str, Any]
) -> None:
    got_argv, got_rest = added(with_field(name, value))
    need_argv, need_rest = added(replace(BASE, **NEEDS.get(name, {})))
    assert [a for a in got_argv if a not in need_argv] == argv
    assert {k: v for k, v in got_rest.items() if k not in need_rest} == rest


def test_every_field_has_a_case() -> None:
    covered = {c[0] for c in COMPONENT_CASES + JOB_CASES} | {"components"}
    assert covered == {f.name for f in fields(Component)} | {f.name for f in fields(JobRequest)}


def test_all_fields_together_in_the_order_sbatch_is_given_them() -> None:
    part = {name: value for name, value, _, _ in COMPONENT_CASES}  # the last GRES case wins
    job = {name: value for name, value, _, _ in JOB_CASES}
    request = JobRequest((Component(**part),), **job)
    chosen = [c for c in COMPONENT_CASES + JOB_CASES if part.get(c[0], job.get(c[0])) == c[1]]
    argv = request.to_argv()
    assert sorted(argv) == sorted(a for _, _, opts, _ in chosen for a in opts)
    assert argv[0] == "--job-name=train"
    assert (
        argv.index("--account=nlp") < argv.index("--exclude=gpu2") < argv.index("--chdir=/home/a/w")
    )
    assert argv[-1] == "--comment=aipool:name=t,gang=g-1,gang_size=3"
    rest = request.to_rest()
    assert set(rest) == {"job"}
    want_rest: dict[str, Any] = {}
    for _, _, _, props in chosen:
        want_rest.update(props)
    assert rest["job"] == want_rest


def test_a_heterogeneous_request_has_its_job_wide_fields_once() -> None:
    ps = Component(account="vision", partition="cpu", nodes=1, tasks_per_node=1, cpus_per_task=4)
    worker = Component(account="vision", partition="gpu", nodes=2, gres=(Gres("gpu", 1),))
    request = JobRequest(
        (ps, worker),
        name="tf-ps",
        workdir="/w",
        output="tf-ps-%j.out",
        open_mode=OpenMode.APPEND,
        environment=ENV,
        requeue=False,
        dependencies=(Dependency("afterok", 9),),
        kill_on_invalid_dep=True,
        labels={"name": "tf-ps", "topology": "ps_worker"},
    )
    assert request.heterogeneous
    argv = list(request.to_argv())
    cut = argv.index(HET_SEPARATOR)
    first, second = argv[:cut], argv[cut + 1 :]
    assert first == [
        "--job-name=tf-ps",
        "--account=vision",
        "--partition=cpu",
        "--nodes=1",
        "--ntasks-per-node=1",
        "--cpus-per-task=4",
        "--chdir=/w",
        "--output=tf-ps-%j.out",
        "--open-mode=append",
        "--export=PATH=/usr/bin:/bin",
        "--no-requeue",
        "--dependency=afterok:9",
        "--kill-on-invalid-dep=yes",
        "--comment=aipool:name=tf-ps,topology=ps_worker",
    ]
    assert second == [
        "--job-name=tf-ps",
        "--account=vision",
        "--partition=gpu",
        "--nodes=2",
        "--gres=gpu:1",
    ]
    rest = request.to_rest()
    assert set(rest) == {"jobs"}
    one, two = rest["jobs"]
    assert one == {
        "name": "tf-ps",
        "account": "vision",
        "partition": "cpu",
        "nodes": 1,
        "tasks_per_node": 1,
        "cpus_per_task": 4,
        "current_working_directory": "/w",
        "environment": ENV,
        "standard_output": "tf-ps-%j.out",
        "open_mode": "append",
        "no_requeue": True,
        "dependency": "afterok:9",
        "kill_on_invalid_dependency": True,
        "comment": "aipool:name=tf-ps,topology=ps_worker",
    }
    # slurmrestd parses each component alone: each needs the environment and the directory
    assert two == {
        "name": "tf-ps",
        "account": "vision",
        "partition": "gpu",
        "nodes": 2,
        "gres": "gpu:1",
        "current_working_directory": "/w",
        "environment": ENV,
    }
    assert request.gres_totals() == {"gpu": 2}
    moved = request.with_components(account="nlp")
    assert [c.account for c in moved.components] == ["nlp", "nlp"]
    assert moved.components[1].gres == worker.gres


@pytest.mark.parametrize("env", [None, {}])
def test_an_environment_slurmrestd_cannot_carry_is_refused_by_name(
    env: dict[str, str] | None,
) -> None:
    request = replace(BASE, environment=env)
    with pytest.raises(JobRequestError, match=r"^environment: slurmrestd") as refused:
        request.to_rest()
    assert refused.value.field == "environment"
    exports = [a for a in request.to_argv() if a.startswith("--export")]
    assert exports == ([] if env is None else ["--export=NONE"])  # sbatch carries both


def test_a_value_sbatch_cannot_carry_is_refused_by_name() -> None:
    request = replace(BASE, environment={"LIST": "a,b"})
    with pytest.raises(JobRequestError, match="cannot carry the ',' in the value of LIST"):
        request.to_argv()
    assert request.to_rest()["job"]["environment"] == {"LIST": "a,b"}


def test_an_unknown_rest_version_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"v0\.0\.39 is not supported; known: v0\.0\.38, v0\.0\.40"
    ):
        BASE.to_rest("v0.0.39")


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: JobRequest(()), "components"),
        (lambda: Component(nodes=0), "nodes"),
        (lambda: Component(time_limit=True), "time_limit"),
        (lambda: Component(memory_mb=-1), "memory_mb"),
        (lambda: Component(account="a b"), "account"),
        (lambda: Component(partition="gpu\n#SBATCH --uid=0"), "partition"),
        (lambda: Component(exclude=("gpu1 gpu2",)), "exclude"),
        (lambda: Switches(0), "switches"),
        (lambda: Switches(1, -5), "switches"),
        (lambda: Component(switches=1), "switches"),  # type: ignore[arg-type]
        (lambda: Gres("GPU", 1), "gres"),
        (lambda: Gres("gpu", 0), "gres"),
        (lambda: Gres("gpu", 1, "a100:2"), "gres"),
        (lambda: Dependency("before", 1), "dependencies"),
        (lambda: Dependency("afterok", "1,afterany:2"), "dependencies"),
        (lambda: replace(BASE, name="x\ny"), "name"),
        (lambda: replace(BASE, workdir="/w\x00"), "workdir"),
        (lambda: replace(BASE, begin="now +1"), "begin"),
        (lambda: replace(BASE, mail_type=("END",)), "mail_type"),
        (lambda: replace(BASE, mail_user="a@b", mail_type=("SOMETIMES",)), "mail_type"),
        (lambda: replace(BASE, environment={"A=B": "1"}), "environment"),
        (lambda: replace(BASE, environment={"A": "1\x00"}), "environment"),
        (lambda: replace(BASE, labels={"name": "x,gang=y"}), "labels"),
        (lambda: replace(BASE, labels={"bad key": "x"}), "labels"),
    ],
)
def test_values_no_form_may_carry_are_refused_by_name(build: Any, field: str) -> None:
    with pytest.raises(JobRequestError) as refused:
        build()
    assert refused.value.field == field
    assert str(refused.value).startswith(f"{field}: ")
