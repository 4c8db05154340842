"""The spec schema: what it accepts, and a clear ``path: message`` for everything it refuses."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from jobspec.errors import SpecError
from jobspec.model import (
    DependencyType,
    MailEvent,
    MountKind,
    MountMode,
    Priority,
    TopologyKind,
)
from tests.unit.jobspec.conftest import errors_of, make, spec_data


def test_the_smallest_spec() -> None:
    spec = make(resources={"gpus": 0.25})
    assert spec.name == "hello"
    assert spec.command == ("python3", "-c", "print(1)")
    assert spec.resources.gpus == Fraction(1, 4)
    assert spec.priority is Priority.MEDIUM
    assert spec.topology.kind is TopologyKind.SINGLE


@pytest.mark.parametrize(
    ("gpus", "expected"),
    [
        (0.25, Fraction(1, 4)),
        ("1/8", Fraction(1, 8)),
        ("5/32", Fraction(5, 32)),
        ("0.5", Fraction(1, 2)),
        (0.03125, Fraction(1, 32)),
        ("31/32", Fraction(31, 32)),
        (1, Fraction(1)),
        ("2", Fraction(2)),
        (0, Fraction(0)),
        ("4/4", Fraction(1)),
        (1.25, Fraction(5, 4)),
        ("41/32", Fraction(41, 32)),
    ],
)
def test_gpu_amounts(gpus: Any, expected: Fraction) -> None:
    assert make(resources={"gpus": gpus}).resources.gpus == expected


def test_fractions_become_shards_and_whole_cards_stay_cards() -> None:
    quarter = make(resources={"gpus": 0.25}).resources
    assert (quarter.whole_gpus, quarter.gpu_fraction) == (0, Fraction(1, 4))
    two = make(resources={"gpus": 2}).resources
    assert (two.whole_gpus, two.gpu_fraction, two.devices) == (2, None, 2)
    assert not quarter.shares_across_cards
    assert not two.shares_across_cards
    more = make(resources={"gpus": 1.25}).resources
    assert (more.whole_gpus, more.gpu_fraction, more.devices) == (0, Fraction(5, 4), 0)
    assert more.shares_across_cards


def test_off_grid_fraction_names_the_nearest_valid_sizes() -> None:
    (msg,) = errors_of(spec_data(resources={"gpus": 0.3}))
    assert msg.startswith("resources.gpus: ")
    assert "9/32" in msg
    assert "5/16" in msg


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("time", 90, 90),
        ("time", "30m", 30),
        ("time", "2h", 120),
        ("time", "1d", 1440),
        ("time", "90s", 2),
        ("time", "1:30:00", 90),
        ("time", "45", 45),
        ("time", "10:30", 11),
        ("time", "1-12", 2160),
        ("time", "1-12:30", 2190),
        ("time", "2-00:00:01", 2881),
        ("memory", "16G", 16384),
        ("memory", "512M", 512),
        ("memory", "512MiB", 512),
        ("memory", "1.5T", 1572864),
        ("memory", 2048, 2048),
        ("memory", "1024K", 1),
    ],
)
def test_sizes_and_times(field: str, value: Any, expected: int) -> None:
    res = make(resources={field: value}).resources
    assert (res.time_min if field == "time" else res.memory_mb) == expected


def test_everything_a_spec_can_carry() -> None:
    spec = make(
        project="nlp",
        priority="low",
        env={"HF_HOME": "/scratch/hf", "EMPTY": ""},
        workdir="/home/alice/run",
        outputs="/scratch/alice/out",
        conda="torch",
        modules=["cuda/12.1"],
        mounts=[
            {"name": "imagenet", "path": "imagenet"},
            {"name": "bert", "path": "/m/bert", "kind": "model", "mode": "rw"},
        ],
        restart={"max_restarts": 2, "on_failure": True},
        dependencies={"afterok": [12, "prep"], "afternotok": "13"},
        affinity={
            "features": ["a100"],
            "nodes": ["gpu[1-2]"],
            "exclude": ["gpu3"],
            "anti_affinity_group": "sweep",
        },
        notify={"email": "alice@example.org"},
    )
    assert spec.env == {"HF_HOME": "/scratch/hf", "EMPTY": ""}
    assert spec.mounts[1].kind is MountKind.MODEL
    assert spec.mounts[1].mode is MountMode.RW
    assert spec.mounts[1].env_name == "AIPOOL_MODEL_BERT"
    assert [(d.type, d.on) for d in spec.dependencies] == [
        (DependencyType.AFTEROK, 12),
        (DependencyType.AFTEROK, "prep"),
        (DependencyType.AFTERNOTOK, 13),
    ]
    assert spec.spec_dependencies == ("prep",)
    assert spec.notify is not None
    assert spec.notify.events == (MailEvent.END, MailEvent.FAIL)
    assert spec.affinity.exclude == ("gpu3",)
    assert spec.restart.requeue is True


def test_heterogeneous_roles_in_component_order() -> None:
    spec = make(
        topology={
            "kind": "scheduler_server_worker",
            "roles": {
                "worker": {"replicas": 2, "resources": {"gpus": 0.5}},
                "scheduler": {},
                "server": {"replicas": 2, "command": ["srv"]},
            },
        }
    )
    assert [r.name for r in spec.topology.roles] == ["scheduler", "server", "worker"]
    assert spec.topology.role("server").command == ("srv",)
    assert spec.topology.role("worker").resources.gpus == Fraction(1, 2)


def test_jupyter_needs_no_command() -> None:
    spec = make(command=None, jupyter=True)
    assert spec.jupyter is not None
    assert spec.command == ()


# (spec fields, the message line expected among the errors)
REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"surprise": 1}, "surprise: Unknown field."),
    ({"resources": {"gpu": 1}}, "resources.gpu: Unknown field."),
    ({"name": None}, "name: Missing data for required field."),
    ({"name": "-x"}, "name: '-x' is not allowed"),
    ({"name": "a" * 65}, "name: is longer than 64 characters"),
    ({"name": "训练 四分之一"}, "name: '训练 四分之一' is not allowed"),
    ({"name": "$(id)"}, "name: '$(id)' is not allowed"),
    ({"name": "2024"}, "name: '2024' is not allowed"),
    ({"name": 3}, "name: must be a string, not a number"),
    ({"name": ""}, "name: must not be empty"),
    ({"command": None}, "command: missing: give command"),
    ({"script": "echo"}, "script: give command or script, not both"),
    ({"command": "'open"}, "command: cannot be split into words: No closing quotation"),
    ({"command": ""}, "command: must not be empty"),
    ({"command": [""]}, "command: must name a program to run"),
    ({"command": ["a", "b\nc"]}, "command[1]: must not contain newlines"),
    ({"command": {"a": 1}}, "command: must be a string or a list of words"),
    ({"script": "\x1b[2J", "command": None}, "script: must not contain control characters"),
    ({"project": "NLP"}, "project: 'NLP' is not allowed: Slurm account names"),
    ({"partition": "gpu;x"}, "partition: 'gpu;x' is not allowed"),
    ({"priority": "urgent"}, "priority: Must be one of: high, medium, low."),
    ({"resources": {"gpus": 0.3}}, "resources.gpus: GPU fraction 0.3 is not a multiple of 1/32"),
    ({"resources": {"gpus": 1.3}}, "resources.gpus: 1.3 cards: more than one card is a whole"),
    ({"resources": {"gpus": -1}}, "resources.gpus: must not be negative"),
    ({"resources": {"gpus": True}}, "resources.gpus: must be a number of cards"),
    ({"resources": {"gpus": "a lot"}}, "resources.gpus: 'a lot' is not a number of cards"),
    ({"resources": {"gpus": "1/0"}}, "resources.gpus: '1/0' divides by zero"),
    ({"resources": {"gpus": 65}}, "resources.gpus: at most 64 cards per node"),
    ({"resources": {"gpus": float("nan")}}, "resources.gpus: must be a finite number"),
    ({"resources": {"gpus": 1, "npus": 1}}, "resources.npus: a job asks for GPUs or NPUs"),
    ({"resources": {"gpu_type": "a100"}}, "resources.gpu_type: set gpus as well"),
    ({"resources": {"gpus": 0.5, "gpu_type": "a100"}}, "resources.gpu_type: a share of a card"),
    ({"resources": {"gpus": 1.5, "gpu_type": "a100"}}, "resources.gpu_type: a share of a card"),
    ({"resources": {"npu_type": "910b"}}, "resources.npu_type: set npus as well"),
    ({"resources": {"gpus": 1, "gpu_type": "a 100"}}, "resources.gpu_type: 'a 100' is not allowed"),
    ({"resources": {"cpus": 0}}, "resources.cpus: Must be greater than or equal to 1"),
    ({"resources": {"cpus": 2.5}}, "resources.cpus: must be a whole number"),
    ({"resources": {"cpus": "2"}}, "resources.cpus: must be a whole number"),
    ({"resources": {"nodes": True}}, "resources.nodes: must be a whole number"),
    ({"resources": {"memory": "lots"}}, "resources.memory: 'lots' is not a size"),
    ({"resources": {"memory": "0M"}}, "resources.memory: must be between 1M and 64T"),
    ({"resources": {"memory": True}}, "resources.memory: must be a size"),
    ({"resources": {"time": "forever"}}, "resources.time: 'forever' is not a time limit"),
    ({"resources": {"time": "1:75:00"}}, "resources.time: '1:75:00' is not a time limit"),
    ({"resources": {"time": 0}}, "resources.time: must be between 1 minute and 365 days"),
    ({"resources": {"time": 1.5}}, "resources.time: 1.5 is not a time limit"),
    ({"resources": {"nodes": 2}}, "resources.nodes: single runs on one node"),
    ({"resources": {"tasks_per_node": 2}}, "resources.tasks_per_node: single runs one process"),
    ({"topology": "multi_gpu", "resources": {"gpus": 0.5}}, "resources.gpus: multi_gpu starts"),
    ({"topology": "multi_gpu", "resources": {"nodes": 2, "gpus": 2}}, "resources.nodes: multi_gpu"),
    ({"topology": "mesh"}, "topology.kind: Must be one of: single, multi_gpu, ddp, mpi"),
    ({"topology": {"kind": "ddp", "roles": {"worker": {}}}}, "topology.roles: only heterogeneous"),
    ({"topology": {"kind": "ps_worker", "roles": {"ps": {}}}}, "topology.roles: ps_worker needs"),
    (
        {"topology": {"kind": "ps_worker", "roles": {"ps": {}, "worker": {}, "chief": {}}}},
        "topology.roles: unknown role(s) chief",
    ),
    (
        {"topology": {"kind": "master_worker", "roles": {"master": {"replicas": 2}, "worker": {}}}},
        "topology.roles.master.replicas: must be 1",
    ),
    (
        {"topology": {"kind": "ps_worker", "roles": {"ps": {"replicas": 0}, "worker": {}}}},
        "topology.roles.ps.replicas: Must be greater than or equal to 1",
    ),
    (
        {
            "topology": {
                "kind": "ps_worker",
                "roles": {"ps": {"resources": {"nodes": 2}}, "worker": {}},
            }
        },
        "topology.roles.ps.resources.nodes: Unknown field.",
    ),
    (
        {"topology": {"kind": "ps_worker", "roles": {"ps": {}, "worker": {"replicas": 64}}}},
        "topology.roles: at most 64 replicas in all",
    ),
    ({"topology": {"kind": "ps_worker", "roles": []}}, "topology.roles: must be a mapping"),
    (
        {
            "topology": {"kind": "ps_worker", "roles": {"ps": {}, "worker": {}}},
            "resources": {"gpus": 1},
        },
        "resources.gpus: a ps_worker job sets resources per role",
    ),
    (
        {
            "topology": {"kind": "ps_worker", "roles": {"ps": {}, "worker": {}}},
            "affinity": {"nodes": ["gpu1"]},
        },
        "affinity.nodes: roles cannot share one node list",
    ),
    ({"env": ["A=1"]}, "env: must be a mapping of variable names to strings"),
    ({"env": {"1A": "x"}}, "env.1A: '1A' is not a valid variable name"),
    ({"env": {"A-B": "x"}}, "env.A-B: 'A-B' is not a valid variable name"),
    ({"env": {"SLURM_JOB_ID": "1"}}, "env.SLURM_JOB_ID: SLURM_JOB_ID is reserved"),
    ({"env": {"AIPOOL_X": "1"}}, "env.AIPOOL_X: AIPOOL_X is reserved"),
    ({"env": {"BASH_ENV": "/tmp/x"}}, "env.BASH_ENV: BASH_ENV is reserved"),
    ({"env": {"IFS": ","}}, "env.IFS: IFS is reserved"),
    ({"env": {"A": 1}}, "env.A: must be a string, not a number (quote it in YAML)"),
    ({"env": {"A": None}}, "env.A: must be a string, not null"),
    ({"env": {"A": "x\ny"}}, "env.A: must not contain newlines"),
    ({"env": {"A": "x\u2028y"}}, "env.A: must not contain newlines"),
    ({"env": {"A": "\ud800"}}, "env.A: must be valid Unicode text"),
    ({"env": {"A": "x" * 4097}}, "env.A: is longer than 4096 characters"),
    ({"workdir": "relative/dir"}, "workdir: 'relative/dir' is not allowed: must be an absolute"),
    ({"workdir": "/a b"}, "workdir: '/a b' is not allowed"),
    ({"outputs": "/out/%j"}, "outputs: '/out/%j' is not allowed"),
    ({"outputs": "/a/../etc"}, "outputs: '/a/../etc' is not allowed: '..'"),
    ({"conda": "my env"}, "conda: 'my env' is not a conda environment name"),
    ({"modules": ["cuda 12"]}, "modules[0]: 'cuda 12' is not allowed"),
    ({"mounts": [{"name": "d"}]}, "mounts[0].path: Missing data for required field."),
    ({"mounts": [{"name": "d", "path": "../x"}]}, "mounts[0].path: '../x' is not allowed"),
    ({"mounts": [{"name": "d", "path": "/x", "mode": "rwx"}]}, "mounts[0].mode: Must be one of"),
    (
        {"mounts": [{"name": "a-b", "path": "/x"}, {"name": "a.b", "path": "/y"}]},
        "mounts[1].name: clashes with mounts[0] (a.b)",
    ),
    ({"restart": {"on_failure": True}}, "restart.max_restarts: on_failure needs max_restarts"),
    (
        {"restart": {"max_restarts": 1, "on_failure": True, "on_node_failure": False}},
        "restart.on_node_failure: on_failure requeues the job",
    ),
    ({"restart": {"max_restarts": 101}}, "restart.max_restarts: Must be greater than or equal"),
    ({"dependencies": ["prep"]}, "dependencies: must map afterok/afterany/afternotok"),
    ({"dependencies": {"before": [1]}}, "dependencies.before: unknown dependency type"),
    ({"dependencies": {"afterok": [0]}}, "dependencies.afterok[0]: job ids are positive"),
    ({"dependencies": {"afterok": ["a b"]}}, "dependencies.afterok[0]: 'a b' is neither"),
    ({"affinity": {"features": ["a&b"]}}, "affinity.features[0]: 'a&b' is not allowed"),
    ({"affinity": {"nodes": ["gpu[1-"]}}, "affinity.nodes[0]: 'gpu[1-' is not allowed"),
    ({"affinity": {"exclude": ["x,y"]}}, "affinity.exclude[0]: 'x,y' is not allowed"),
    ({"notify": {"email": "not-an-address"}}, "notify.email: 'not-an-address' is not allowed"),
    ({"notify": {"email": "a@b.org", "events": []}}, "notify.events: name at least one event"),
    ({"notify": {"email": "a@b.org", "events": ["often"]}}, "notify.events[0]: Must be one of"),
    ({"jupyter": {"app": "vscode"}, "command": None}, "jupyter.app: Must be one of: lab"),
    ({"jupyter": True}, "command: a Jupyter job runs Jupyter"),
    ({"jupyter": True, "command": None, "topology": "ddp"}, "topology.kind: a Jupyter job is"),
]


@pytest.mark.parametrize(("fields", "expected"), REFUSED, ids=[e for _, e in REFUSED])
def test_refused_with_the_field_path(fields: dict[str, Any], expected: str) -> None:
    messages = errors_of(spec_data(**fields))
    assert any(m.startswith(expected) for m in messages), messages


def test_all_problems_are_reported_at_once() -> None:
    messages = errors_of(spec_data(name="x y", priority="now", env={"A": 1}, extra=True))
    assert [m.split(":")[0] for m in messages] == ["env.A", "extra", "name", "priority"]


def test_a_spec_must_be_a_mapping() -> None:
    assert errors_of(["name"]) == ["a spec must be a mapping, not a list"]


def test_spec_error_keeps_each_message() -> None:
    err = SpecError(["a: one", "b: two"])
    assert str(err) == "a: one\nb: two"
    assert err.prefixed("jobs[1].").messages == ("jobs[1].a: one", "jobs[1].b: two")
    assert SpecError.at("", "bare").messages == ("bare",)
