"""The programs slurmctld runs: plan, switch, DOWN with the reason, release, event log."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import Node, NodeState
from slurm_plugins.power.drivers import Outcome
from slurm_plugins.power.plan import CEILING_PREFIX, EventKind
from slurm_plugins.power.program import Programs, append_events, read_events

from .conftest import power_config


class FakeSlurm:
    def __init__(self, nodes: list[Node]) -> None:
        self._nodes = nodes
        self.updates: list[tuple[str, str | None, str | None]] = []

    def nodes(self) -> list[Node]:
        return self._nodes

    def update_node(
        self, node: str, *, state: str | None = None, reason: str | None = None
    ) -> bool:
        self.updates.append((node, state, reason))
        return True


class FakeDriver:
    def __init__(self, failing: set[str]) -> None:
        self.failing = failing
        self.calls: list[tuple[str, bool]] = []

    def switch(self, node: str, on: bool) -> Outcome:
        self.calls.append((node, on))
        if node in self.failing:
            return Outcome(node, False, "BMC did not answer")
        return Outcome(node, True)


def node(name: str, *flags: str, state: NodeState = NodeState.IDLE, reason: str = "") -> Node:
    return Node(name, state, frozenset(flags), partitions=("gpu",), reason=reason)


def programs(tmp_path: Path, nodes: list[Node], failing: set[str] = frozenset()) -> tuple:
    slurm, driver = FakeSlurm(nodes), FakeDriver(set(failing))
    cfg = power_config(events=str(tmp_path / "events.jsonl"))
    return Programs(cfg, cast(SlurmClient, slurm), driver, clock=lambda: 1000.0), slurm, driver


def test_resume_downs_the_failing_node_with_the_reason(tmp_path: Path) -> None:
    nodes = [
        node("egpu1", "POWERING_UP"),
        node("egpu2", "POWERING_UP"),
        node("egpu3", "POWERED_DOWN"),
    ]
    prog, slurm, driver = programs(tmp_path, nodes, {"egpu2"})
    report = prog.resume("egpu[1-2]")
    assert sorted(driver.calls) == [("egpu1", True), ("egpu2", True)]
    assert slurm.updates == [("egpu2", "DOWN", "power: resume failed: BMC did not answer")]
    assert [o.node for o in report.failed] == ["egpu2"]
    kinds = [(e.node, e.kind) for e in read_events(tmp_path / "events.jsonl")]
    assert kinds == [("egpu1", EventKind.RESUME), ("egpu2", EventKind.RESUME_FAILED)]


def test_resume_over_the_ceiling_holds_a_node_back(tmp_path: Path) -> None:
    nodes = [
        node("egpu1"),
        node("egpu2", "POWERING_UP"),
        node("egpu3", "POWERING_UP"),
        node("egpu9"),
    ]
    nodes[0] = node("egpu1")  # up already
    prog, slurm, driver = programs(tmp_path, nodes)
    report = prog.resume("egpu[2-3]")
    assert driver.calls == [("egpu2", True)]
    assert report.refused[0][0] == "egpu3"
    assert slurm.updates[0][:2] == ("egpu3", "DOWN")
    assert slurm.updates[0][2].startswith(CEILING_PREFIX)


def test_suspend_switches_off_and_releases_held_nodes(tmp_path: Path) -> None:
    held = f"{CEILING_PREFIX}: partition gpu has 2 nodes up"
    nodes = [
        node("egpu1", "POWERING_DOWN"),
        node("egpu2"),
        node("egpu3", "POWERED_DOWN", state=NodeState.DOWN, reason=held),
    ]
    prog, slurm, driver = programs(tmp_path, nodes)
    report = prog.suspend("egpu1")
    assert driver.calls == [("egpu1", False)]
    assert report.released == ("egpu3",)
    assert slurm.updates == [("egpu3", "RESUME", None)]
    assert [e.kind for e in read_events(tmp_path / "events.jsonl")] == [EventKind.SUSPEND]


def test_resume_fail_switches_the_node_off_again(tmp_path: Path) -> None:
    prog, _, driver = programs(tmp_path, [node("enpu1", state=NodeState.DOWN)])
    prog.resume_failed("enpu1")
    assert driver.calls == [("enpu1", False)]
    kinds = [e.kind for e in read_events(tmp_path / "events.jsonl")]
    assert kinds == [EventKind.RESUME_FAILED, EventKind.SUSPEND]


def test_event_log_skips_damaged_lines(tmp_path: Path) -> None:
    log = tmp_path / "e.jsonl"
    append_events(log, [])
    assert not log.exists()
    log.write_text('{"at": 1, "node": "n1", "event": "suspend", "detail": ""}\nnot json\n')
    assert [e.node for e in read_events(log)] == ["n1"]
    assert list(read_events(tmp_path / "none.jsonl")) == []
