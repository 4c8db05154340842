"""Checks over time: drain once, alert once, return after N healthy checks, leave admins'
drains alone. Each test runs the pure planner check after check, as the checker would,
applying the plan's drains and resumes to the node views between checks."""

from __future__ import annotations

from dataclasses import replace

from slurm_plugins.health.config import HealthConfig
from slurm_plugins.health.plan import HealthPlan, HealthState, NodeRecord, plan
from slurm_plugins.health.verdict import NodeView
from slurm_plugins.node import Seen
from tests.unit.health.builders import CONFIG, NOW, drained_by_us, gpus, seen, view

BROKEN = seen(devices=gpus(g1=("xid 79",)))
FINE = seen()


class World:
    """Nodes as Slurm shows them, changed by the plans' drains and resumes."""

    def __init__(self, *nodes: NodeView, config: HealthConfig = CONFIG) -> None:
        self.nodes = {n.name: n for n in nodes}
        self.state = HealthState()
        self.config = config
        self.plans: list[HealthPlan] = []

    def check(self, reports: dict[str, Seen | None], at: float = NOW) -> HealthPlan:
        got = {k: v for k, v in reports.items() if v is not None}
        p = plan(list(self.nodes.values()), got, self.state, now=at, config=self.config)
        for d in p.drains:
            self.nodes[d.node] = replace(
                self.nodes[d.node], flags=self.nodes[d.node].flags | {"DRAIN"}, reason=d.reason
            )
        for r in p.resumes:
            self.nodes[r.node] = replace(
                self.nodes[r.node], flags=self.nodes[r.node].flags - {"DRAIN"}, reason=""
            )
        self.state = p.state
        self.plans.append(p)
        return p

    def kinds(self) -> list[str]:
        return [n.kind for p in self.plans for n in p.notifications]


def test_failing_node_is_drained_once_alerted_once_and_returns_after_n_checks() -> None:
    w = World(view("gpu1"), view("gpu2"))
    p = w.check({"gpu1": BROKEN, "gpu2": FINE})
    assert [(d.node, d.reason) for d in p.drains] == [("gpu1", "health: gpu 1: xid 79")]
    assert [n.subject for n in p.notifications] == [
        "aipool: node gpu1 drained: health: gpu 1: xid 79"
    ]
    assert p.notifications[0].users == ("root",)
    assert "- gpu 1: xid 79" in p.notifications[0].text
    for _ in range(3):  # still broken: nothing new to do or say
        p = w.check({"gpu1": BROKEN, "gpu2": FINE})
        assert not p.drains
        assert not p.notifications
    assert w.check({"gpu1": FINE, "gpu2": FINE}).resumes == ()  # 1 of 2 healthy checks
    p = w.check({"gpu1": FINE, "gpu2": FINE})
    assert [r.node for r in p.resumes] == ["gpu1"]
    assert w.kinds() == ["node_drained", "node_resumed"]
    assert "DRAIN" not in w.nodes["gpu1"].flags
    assert w.state == HealthState()  # nothing left to remember


def test_a_check_without_report_breaks_the_streak() -> None:
    w = World(view("gpu1"))
    w.check({"gpu1": BROKEN})
    w.check({"gpu1": FINE})
    w.check({"gpu1": None})  # agent silent: not known to be healthy
    assert not w.check({"gpu1": FINE}).resumes
    assert [r.node for r in w.check({"gpu1": FINE}).resumes] == ["gpu1"]


def test_relapse_during_recovery_restarts_the_count_without_a_new_alert() -> None:
    w = World(view("gpu1"))
    w.check({"gpu1": BROKEN})
    w.check({"gpu1": FINE})
    p = w.check({"gpu1": BROKEN})
    assert not p.drains
    assert not p.notifications
    assert w.state.nodes["gpu1"].streak == 0
    w.check({"gpu1": FINE})
    assert [r.node for r in w.check({"gpu1": FINE}).resumes] == ["gpu1"]
    assert w.kinds() == ["node_drained", "node_resumed"]


def test_new_kind_of_problem_on_a_drained_node_is_told() -> None:
    w = World(view("gpu1"))
    w.check({"gpu1": BROKEN})
    p = w.check({"gpu1": seen(devices=gpus(g1=("xid 79",)), skew=9)})
    assert [n.kind for n in p.notifications] == ["node_failing"]
    assert "failing (drained)" in p.notifications[0].subject
    assert "clock 9.00 s ahead" in p.notifications[0].subject


def test_an_admins_drain_is_never_resumed() -> None:
    admin = view("gpu1", flags="DRAIN", reason="maintenance: new PSU")
    w = World(admin)
    p = w.check({"gpu1": BROKEN})
    assert not p.drains
    assert [n.subject for n in p.notifications] == [
        "aipool: node gpu1 failing (drained by someone else): health: gpu 1: xid 79"
    ]
    for _ in range(4):
        assert not w.check({"gpu1": FINE}).resumes
    assert w.nodes["gpu1"].reason == "maintenance: new PSU"


def test_our_drain_found_after_a_lost_state_file_is_still_ours() -> None:
    w = World(drained_by_us("gpu1"))  # drained by an earlier checker; state gone
    w.check({"gpu1": FINE})
    assert [r.node for r in w.check({"gpu1": FINE}).resumes] == ["gpu1"]


def test_drain_false_only_tells() -> None:
    w = World(view("gpu1"), config=replace(CONFIG, drain=False))
    p = w.check({"gpu1": BROKEN})
    assert not p.drains
    assert [n.kind for n in p.notifications] == ["node_failing"]
    assert "(not drained)" in p.notifications[0].subject
    assert not w.check({"gpu1": BROKEN}).notifications
    w.check({"gpu1": FINE})  # recovered on its own: the next failure is told again
    assert [n.kind for n in w.check({"gpu1": BROKEN}).notifications] == ["node_failing"]


def test_warnings_are_told_once_and_do_not_drain() -> None:
    w = World(view("gpu1"), view("gpu2"))
    p = w.check({"gpu1": FINE})  # gpu2 has no agent
    assert not p.drains
    assert [(n.kind, n.subject) for n in p.notifications] == [
        ("node_warning", "aipool: node gpu2 warning: health: no agent report")
    ]
    assert not w.check({"gpu1": FINE}).notifications


def test_only_the_configured_nodes_are_checked() -> None:
    w = World(
        view("gpu1"), view("gpu2", flags="NOT_RESPONDING"), config=replace(CONFIG, nodes=("gpu1",))
    )
    p = w.check({"gpu1": FINE})
    assert [v.node for v in p.verdicts] == ["gpu1"]
    assert not p.drains


def test_not_responding_node_is_drained_and_returns() -> None:
    w = World(view("gpu1", flags="NOT_RESPONDING"))
    p = w.check({"gpu1": None})
    assert [d.reason for d in p.drains] == ["health: slurmd not responding"]
    w.nodes["gpu1"] = replace(w.nodes["gpu1"], flags=w.nodes["gpu1"].flags - {"NOT_RESPONDING"})
    w.check({"gpu1": FINE})
    assert [r.node for r in w.check({"gpu1": FINE}).resumes] == ["gpu1"]


def test_state_round_trips_through_json() -> None:
    from plumbing import codec

    state = HealthState({"gpu1": NodeRecord(1, "device_error", NOW)})
    assert codec.load(HealthState, codec.dump(state)) == state


def test_a_fault_on_every_node_drains_at_most_the_limit() -> None:
    names = ["gpu1", "gpu2", "gpu3", "gpu4", "gpu5"]
    w = World(*(view(n) for n in names), config=replace(CONFIG, max_drained=0.5))
    p = w.check(dict.fromkeys(names, BROKEN))
    assert [d.node for d in p.drains] == ["gpu1", "gpu2"]  # int(0.5 x 5) = 2
    held = [n.subject for n in p.notifications if n.kind == "node_failing"]
    assert held == [
        f"aipool: node {n} failing (not drained: 2 node(s) drained by health already, the "
        "limit): health: gpu 1: xid 79"
        for n in ("gpu3", "gpu4", "gpu5")
    ]
    assert not w.check(dict.fromkeys(names, BROKEN)).notifications  # told once
    fine_first = {**dict.fromkeys(names, BROKEN), "gpu1": FINE}
    w.check(fine_first)
    p = w.check(fine_first)  # gpu1 returns, which makes room for gpu3
    assert [r.node for r in p.resumes] == ["gpu1"]
    p = w.check(fine_first)
    assert [d.node for d in p.drains] == ["gpu3"]
    assert [n.kind for n in p.notifications] == ["node_drained"]


def test_one_node_may_always_be_drained() -> None:
    w = World(view("gpu1"), config=replace(CONFIG, max_drained=0.0))
    assert [d.node for d in w.check({"gpu1": BROKEN}).drains] == ["gpu1"]
