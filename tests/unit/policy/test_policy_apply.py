"""apply: one call per kind of change, nothing when nothing changed, failures isolated,
write-ahead state."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

import pytest

from slurm_plugins.client import SlurmClient
from slurm_plugins.client.errors import ControllerUnavailable
from slurm_plugins.client.runner import Completed, ReplayRunner
from slurm_plugins.policy.apply import apply
from slurm_plugins.policy.plan import (
    Action,
    Hold,
    JobAction,
    JobChange,
    NodeWeight,
    Notification,
    Plan,
)
from slurm_plugins.policy.snapshot import DaemonState, Mark
from slurm_plugins.policy.state import StateStore

OK = Completed((), 0, "", "")
UP = Completed((), 0, "Slurmctld(primary) at localhost is UP\n", "")
DOWN = Completed((), 1, "Slurmctld(primary) at localhost is DOWN\n", "")


def client(answers: dict | None = None, **kw: object) -> tuple[SlurmClient, ReplayRunner]:
    answers = {("scontrol",): OK, ("scancel",): OK, **(answers or {})}
    answers.setdefault(("scontrol", "ping"), UP)
    runner = ReplayRunner(answers)
    return SlurmClient(runner, **kw), runner  # type: ignore[arg-type]


class Sink:
    def __init__(self) -> None:
        self.sent: list[Notification] = []

    def send(self, note: Notification) -> None:
        self.sent.append(note)


def full_plan() -> Plan:
    return Plan(
        now=100.0,
        job_changes=(JobChange(1, site_factor=5), JobChange(2, exc_nodes="gpu1,gpu2")),
        holds=(Hold(3, "gang"), Hold(4, "gang")),
        releases=(Hold(5, "gang ready"),),
        actions=(
            JobAction(6, Action.SIGNAL, "drain", signal="USR1"),
            JobAction(7, Action.REQUEUE, "drain"),
            JobAction(8, Action.REQUEUE, "capacity"),
            JobAction(9, Action.CANCEL, "idle"),
            JobAction(10, Action.REQUEUE_HOLD, "gang"),
        ),
        node_weights=(NodeWeight("gpu1", 5, "packing"),),
        notifications=(Notification("idle", 9, ("bob", "root"), "job 9 cancelled", "idle"),),
        state=DaemonState(holds={3: Mark(100), 4: Mark(100), 10: Mark(100)}),
    )


def test_one_call_per_kind_in_a_safe_order(tmp_path: Path) -> None:
    c, r = client()
    sink = Sink()
    res = apply(full_plan(), c, old_state=DaemonState(), store=StateStore(tmp_path), notifier=sink)
    argvs = [argv for argv, _ in r.calls]
    assert argvs == [
        ("scontrol", "hold", "3,4"),
        ("scontrol",),
        ("scontrol", "release", "5"),
        ("scancel", "--signal", "USR1", "6"),
        ("scontrol", "requeue", "7,8"),
        ("scontrol", "requeuehold", "10"),
        ("scancel", "9"),
        ("scontrol", "update", "NodeName=gpu1", "Weight=5"),
    ]
    assert r.calls[1][1] == "update JobId=1 SiteFactor=5\nupdate JobId=2 ExcNodeList=gpu1,gpu2\n"
    assert res.calls == 8
    assert [n.job_id for n in sink.sent] == [9]
    assert StateStore(tmp_path).load() == full_plan().state


def test_empty_plan_makes_no_call(tmp_path: Path) -> None:
    c, r = client()
    res = apply(Plan(now=1.0), c, old_state=DaemonState(), store=StateStore(tmp_path))
    assert r.calls == []
    assert res.calls == 0


def test_failed_batch_is_retried_one_by_one_and_failures_leave_state(tmp_path: Path) -> None:
    def requeue(argv: Sequence[str], stdin: str | None) -> Completed:
        ids = argv[-1].split(",")
        if "8" in ids:
            return Completed(
                tuple(argv), 1, "", "Requested operation is presently disabled for job 8"
            )
        return Completed(tuple(argv), 0, "", "")

    def hold(argv: Sequence[str], stdin: str | None) -> Completed:
        if "4" in argv[-1].split(","):
            return Completed(tuple(argv), 1, "", "Invalid job id specified")
        return Completed(tuple(argv), 0, "", "")

    c, r = client(
        {
            ("scontrol",): OK,
            ("scancel",): OK,
            ("scontrol", "requeue"): requeue,
            ("scontrol", "hold"): hold,
        }
    )
    res = apply(full_plan(), c, old_state=DaemonState(), store=StateStore(tmp_path))
    assert ("scontrol", "requeue", "7") in [a for a, _ in r.calls]
    assert res.failed == {4: "hold", 8: "requeue"}
    assert set(res.state.holds) == {3, 10}
    assert set(StateStore(tmp_path).load().holds) == {3, 10}


def test_write_ahead_keeps_holds_if_killed_mid_apply(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    old = DaemonState(holds={1: Mark(50)})

    def die(argv: Sequence[str], stdin: str | None) -> Completed:
        # the daemon is "killed" right after the hold call went out
        raise KeyboardInterrupt

    c, _ = client({("scontrol", "hold"): OK, ("scontrol",): die, ("scancel",): die})
    with contextlib.suppress(KeyboardInterrupt):
        apply(full_plan(), c, old_state=old, store=store)
    saved = store.load()
    assert {1, 3, 4, 10} <= set(saved.holds)  # old and new holds both still known as ours


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    c, r = client(dry_run=True)
    apply(full_plan(), c, old_state=DaemonState(), store=StateStore(tmp_path))
    assert r.calls == []
    assert not (tmp_path / "state.json").exists()


def test_state_file_survives_damage(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    store.save(DaemonState(holds={1: Mark(1)}))
    store.save(DaemonState(holds={2: Mark(2)}))
    (tmp_path / "state.json").write_text("{not json")
    assert set(store.load().holds) == {1}  # the previous copy


def test_a_failed_batch_with_the_controller_gone_fails_the_cycle_at_once(tmp_path: Path) -> None:
    """No job-by-job retries (a full timeout each) when slurmctld does not answer."""
    failing = Completed((), 1, "", "")  # a failure without Slurm's reason
    c, r = client({("scontrol", "hold"): failing, ("scontrol", "ping"): DOWN})
    with pytest.raises(ControllerUnavailable, match="slurmctld does not answer"):
        apply(full_plan(), c, old_state=DaemonState(), store=StateStore(tmp_path))
    holds = [a for a, _ in r.calls if a[:2] == ("scontrol", "hold")]
    assert len(holds) == 1
    # the write-ahead state still names the holds this cycle meant to make
    assert StateStore(tmp_path).load().holds
