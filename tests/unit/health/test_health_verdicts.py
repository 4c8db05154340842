"""The verdict on one node, case by case: what drains, what is only told, what is healthy."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gres.device import DeviceHealth
from slurm_plugins.health.config import HealthConfig
from slurm_plugins.health.verdict import NodeView, Problem, Verdict, assess
from slurm_plugins.node import Clock, Seen
from tests.unit.health.builders import CONFIG, NOW, gpus, seen, view

P = Problem


@dataclass(frozen=True)
class Case:
    name: str
    node: NodeView
    report: Seen | None
    problems: frozenset[Problem]
    failing: bool
    healthy: bool
    reason_has: str = ""
    config: HealthConfig = CONFIG
    controller_offset: float | None = None


CASES = [
    Case("all well", view(), seen(), frozenset(), False, True),
    Case(
        "slurmd not responding",
        view(flags="NOT_RESPONDING"),
        seen(),
        frozenset({P.NOT_RESPONDING}),
        True,
        False,
        "slurmd not responding",
    ),
    Case(
        "not responding and no report",
        view(flags="NOT_RESPONDING"),
        None,
        frozenset({P.NOT_RESPONDING, P.NO_REPORT}),
        True,
        False,
    ),
    Case("no report: told, never drained", view(), None, frozenset({P.NO_REPORT}), False, False),
    Case(
        "stale report",
        view(),
        seen(age=600),
        frozenset({P.NO_REPORT}),
        False,
        False,
        "",
    ),
    Case(
        "unreadable report",
        view(),
        Seen(None, NOW, "unreadable report gpu1.health.json: bad"),
        frozenset({P.NO_REPORT}),
        False,
        False,
    ),
    Case(
        "fatal xid on one card",
        view(),
        seen(devices=gpus(g1=("xid 79",))),
        frozenset({P.DEVICE_ERROR}),
        True,
        False,
        "gpu 1: xid 79",
    ),
    Case(
        "uncorrected ECC",
        view(),
        seen(devices=gpus(g3=("2 uncorrected ECC error(s)",))),
        frozenset({P.DEVICE_ERROR}),
        True,
        False,
        "gpu 3: 2 uncorrected ECC",
    ),
    Case(
        "a card vanished (inventory says 4)",
        view(gpus=0),
        seen(devices=gpus(3)),
        frozenset({P.DEVICE_MISSING}),
        True,
        False,
        "gpu: 3 of 4 visible",
    ),
    Case(
        "a card vanished (Slurm still counts 8)",
        view(gpus=8),
        seen(devices=gpus(4), expected={}),
        frozenset({P.DEVICE_MISSING}),
        True,
        False,
        "gpu: 4 of 8 visible",
    ),
    Case(
        "no GPU probe on this node: Slurm's count is not compared",
        view(gpus=8),
        seen(devices=(), probed=(), expected={}),
        frozenset(),
        False,
        True,
    ),
    Case(
        "driver gone: NVML sees no card at all",
        view(gpus=4),
        seen(devices=(), expected={}),
        frozenset({P.DEVICE_MISSING}),
        True,
        False,
        "gpu: 0 of 4 visible",
    ),
    Case(
        "NPU health Alarm",
        view("npu1", gpus=0),
        seen(
            "npu1",
            devices=(DeviceHealth("npu", 0), DeviceHealth("npu", 1, ("npu-smi health Alarm",))),
            probed=("npu",),
            expected={"npu": 2},
        ),
        frozenset({P.DEVICE_ERROR}),
        True,
        False,
        "npu 1: npu-smi health Alarm",
    ),
    Case(
        "NPU health Warning: told only",
        view("npu1", gpus=0),
        seen(
            "npu1",
            devices=(DeviceHealth("npu", 0, (), ("npu-smi health Warning",)),),
            probed=("npu",),
            expected={"npu": 1},
        ),
        frozenset({P.DEVICE_WARNING}),
        False,
        True,
    ),
    Case(
        "probe failed outright",
        view(),
        seen(probe_errors=("NVML found GPUs but could not read them",)),
        frozenset({P.PROBE_FAILED}),
        True,
        False,
        "probe failed: NVML",
    ),
    Case(
        "clock 3 s ahead by the report's time stamp",
        view(),
        seen(skew=3.0),
        frozenset({P.CLOCK_SKEW}),
        True,
        False,
        "clock 3.00 s ahead of the controller (report time stamp)",
    ),
    Case(
        "clock 2.4 s behind by chrony",
        view(),
        seen(clock=Clock("chrony", True, -2.4)),
        frozenset({P.CLOCK_SKEW}),
        True,
        False,
        "clock 2.40 s behind the controller (chrony)",
    ),
    Case(
        "skew within the threshold",
        view(),
        seen(skew=0.5, clock=Clock("chrony", True, 0.9)),
        frozenset(),
        False,
        True,
    ),
    Case(
        "both off the same way as the controller: no skew between them",
        view(),
        seen(clock=Clock("chrony", True, 5.0)),
        frozenset(),
        False,
        True,
        controller_offset=4.5,
    ),
    Case(
        "unsynchronised but close: told only",
        view(),
        seen(clock=Clock("chrony", False, 0.0)),
        frozenset({P.CLOCK_UNSYNCED}),
        False,
        True,
    ),
    Case(
        "unsynchronised drains with require_sync",
        view(),
        seen(clock=Clock("timedatectl", False, None)),
        frozenset({P.CLOCK_UNSYNCED}),
        True,
        False,
        "clock not synchronised (timedatectl)",
        config=HealthConfig(require_sync=True),
    ),
    Case(
        "several problems at once, in one reason",
        view(flags="NOT_RESPONDING"),
        seen(devices=gpus(g0=("xid 48",)), skew=-4),
        frozenset({P.NOT_RESPONDING, P.DEVICE_ERROR, P.CLOCK_SKEW}),
        True,
        False,
        "slurmd not responding; gpu 0: xid 48; clock 4.00 s behind",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_verdict(case: Case) -> None:
    v = assess(
        case.node,
        case.report,
        now=NOW,
        config=case.config,
        controller_offset_s=case.controller_offset,
    )
    assert v.problems == case.problems
    assert v.failing is case.failing
    assert v.healthy is case.healthy
    if case.failing:
        assert v.reason().startswith("health: ")
        assert case.reason_has in v.reason()
    else:
        assert v.reason() == ""


def test_reason_is_one_safe_line_for_slurm() -> None:
    v = assess(
        view(),
        seen(devices=gpus(g2=('cannot be opened: "GPU is lost"\nreboot' + "x" * 400,))),
        now=NOW,
        config=CONFIG,
    )
    reason = v.reason()
    assert reason.startswith("health: gpu 2: cannot be opened:  GPU is lost  reboot")
    assert len(reason) == 240
    assert reason.endswith("...")
    assert not any(c in reason for c in "\"'\n")


def test_healthy_needs_a_verdict_with_a_report() -> None:
    assert Verdict("n").healthy
    assert not assess(view(), None, now=NOW, config=CONFIG).healthy


def test_decisions_never_import_the_slurm_client() -> None:
    """Verdicts, plans, reports and the node agent load without the client (DESIGN §2);
    only the checker talks to Slurm."""
    import subprocess
    import sys

    health = ("verdict", "plan", "config")
    node = ("report", "faults", "clock", "health", "samples", "sources", "cli")
    code = (
        "import sys\n"
        + "".join(f"import slurm_plugins.health.{m}\n" for m in health)
        + "".join(f"import slurm_plugins.node.{m}\n" for m in node)
        + "print(','.join(m for m in sys.modules if m.startswith('slurm_plugins.client')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
