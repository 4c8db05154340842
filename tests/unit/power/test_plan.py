"""Pure planning of elastic nodes: ceilings, releases, floors as SuspendExcNodes, energy."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_plugins.power.plan import (
    CEILING_PREFIX,
    Event,
    EventKind,
    NodeView,
    Power,
    energy_saved,
    off_intervals,
    plan_release,
    plan_resume,
    suspend_exc_nodes,
)
from slurm_plugins.power.render import render_power_lines, render_programs

from .conftest import power_config


def view(name: str, power: Power = Power.OFF, *parts: str, **kw: object) -> NodeView:
    return NodeView(name, parts or ("gpu",), power, **kw)  # type: ignore[arg-type]


def cluster(*views: NodeView) -> dict[str, NodeView]:
    return {v.name: v for v in views}


def test_resume_within_the_ceiling() -> None:
    nodes = cluster(
        view("egpu1", Power.POWERING_UP), view("egpu2", Power.POWERING_UP), view("egpu3")
    )
    plan = plan_resume(["egpu1", "egpu2"], nodes, power_config())
    assert plan.start == ("egpu1", "egpu2")
    assert plan.refuse == ()


def test_ceiling_refuses_the_rest_with_a_reason() -> None:
    nodes = cluster(view("egpu1", Power.ON), view("egpu2"), view("egpu3"), view("gpu9", Power.ON))
    plan = plan_resume(["egpu2", "egpu3"], nodes, power_config())
    # egpu1 is up already: one more fits under the ceiling of 2; always-up gpu9 does not count
    assert plan.start == ("egpu2",)
    assert plan.refuse == (("egpu3", f"{CEILING_PREFIX}: partition gpu has 2 nodes up"),)


def test_down_nodes_hold_no_place_and_unknown_nodes_are_refused() -> None:
    nodes = cluster(view("egpu1", Power.ON, down=True), view("egpu2"), view("egpu3"))
    plan = plan_resume(["egpu2", "egpu3", "stranger"], nodes, power_config())
    assert plan.start == ("egpu2", "egpu3")
    assert [n for n, _ in plan.refuse] == ["stranger"]


def test_no_ceiling_means_no_limit() -> None:
    nodes = cluster(*(view(f"egpu{i}", Power.ON) for i in (1, 2)), view("egpu3"))
    plan = plan_resume(["egpu3"], nodes, power_config(partitions={}))
    assert plan.start == ("egpu3",)


def test_release_when_there_is_room_again() -> None:
    held = {"down": True, "reason": f"{CEILING_PREFIX}: partition gpu has 2 nodes up"}
    full = cluster(view("egpu1", Power.ON), view("egpu2", Power.ON), view("egpu3", **held))
    assert plan_release(full, power_config()) == ()
    room = cluster(view("egpu1", Power.ON), view("egpu2"), view("egpu3", **held))
    assert plan_release(room, power_config()) == ("egpu3",)
    other = cluster(view("egpu3", down=True, reason="power: resume failed: bmc"))
    assert plan_release(other, power_config()) == ()


def test_suspend_exc_nodes_counts_first_then_always_up() -> None:
    parts = {"gpu": ["gpu1", "egpu1", "egpu2", "egpu3"], "npu": ["npu1", "enpu1"]}
    cfg = power_config(partitions={"gpu": {"floor": 1}, "npu": {"floor": 5}})
    text = suspend_exc_nodes(cfg, parts, ["gpu1", "egpu1", "egpu2", "egpu3", "npu1", "enpu1"])
    # npu's floor is capped at its one power-saved node
    assert text == "egpu1,egpu2,egpu3:1,enpu1:1,gpu1,npu1"
    assert suspend_exc_nodes(power_config(partitions={}), parts, ["egpu1"]) == ""


@pytest.mark.parametrize(
    ("compact", "power"),
    [
        ("idle", Power.ON),
        ("idle~", Power.OFF),
        ("alloc#", Power.POWERING_UP),
        ("idle%", Power.POWERING_DOWN),
        ("idle!", Power.PENDING_DOWN),
        ("down~", Power.OFF),
    ],
)
def test_sinfo_suffixes(compact: str, power: Power) -> None:
    assert Power.of_sinfo(compact) is power


def test_flags() -> None:
    assert Power.of_flags({"CLOUD", "POWERED_DOWN"}) is Power.OFF
    assert Power.of_flags({"POWERING_UP"}) is Power.POWERING_UP
    assert Power.of_flags({"POWERED_DOWN", "POWERING_DOWN"}) is Power.POWERING_DOWN
    assert Power.of_flags(()) is Power.ON


def ev(at: float, node: str, kind: EventKind) -> Event:
    return Event(at, node, kind)


def test_off_intervals_pair_suspends_with_resumes() -> None:
    events = [
        ev(100, "egpu1", EventKind.SUSPEND),
        ev(400, "egpu1", EventKind.RESUME),
        ev(500, "egpu1", EventKind.SUSPEND),
        ev(50, "egpu2", EventKind.RESUME),  # on from the start: no span
        ev(600, "egpu2", EventKind.SUSPEND_FAILED),
        ev(700, "enpu1", EventKind.SUSPEND),
        ev(800, "enpu1", EventKind.RESUME_FAILED),  # never came up: still off
    ]
    spans = off_intervals(events, until=1000)
    assert spans == {"egpu1": [(100, 400), (500, 1000)], "enpu1": [(700, 1000)]}


def test_energy_is_hours_off_times_idle_watts_clipped_to_the_window() -> None:
    events = [
        ev(0, "egpu1", EventKind.SUSPEND),
        ev(7200, "egpu1", EventKind.RESUME),
        ev(0, "egpu2", EventKind.SUSPEND),
    ]
    rows = energy_saved(events, power_config(), since=3600, until=3 * 3600)
    by = {r.node: r for r in rows}
    assert by["egpu1"].hours == pytest.approx(1.0)
    assert by["egpu1"].kwh == pytest.approx(0.5)  # its own 500 W
    assert by["egpu2"].hours == pytest.approx(2.0)
    assert by["egpu2"].kwh == pytest.approx(0.4)  # the site's 200 W


def test_programs_drop_to_the_service_user_and_keep_no_environment(tmp_path: Path) -> None:
    scripts = render_programs(
        tmp_path / "power.yaml",
        ["/opt/aipool/runtime/bin/aipool"],
        run_as="aipool",
        env={"SLURM_CONF": "/etc/slurm/slurm.conf"},
        log=tmp_path / "programs.log",
    )
    assert set(scripts) == {"power-resume.sh", "power-suspend.sh", "power-resume-fail.sh"}
    line = scripts["power-resume.sh"].splitlines()[-1]
    assert line.startswith("exec setpriv --reuid=aipool --regid=aipool --init-groups -- env -i ")
    assert "SLURM_CONF=/etc/slurm/slurm.conf" in line
    assert f'power resume --config {tmp_path}/power.yaml "$@" >>{tmp_path}/programs.log' in line
    site = render_programs(tmp_path / "p.yaml", ["aipool"])["power-suspend.sh"]
    assert "setpriv" not in site
    assert "power suspend" in site


def test_power_lines_for_slurm_conf(tmp_path: Path) -> None:
    cfg = power_config(suspend_time="5m", resume_rate=0)
    text = render_power_lines(cfg, tmp_path, {"gpu": ["gpu1", "egpu1"]}, ["gpu1", "egpu1"])
    lines = dict(line.split("=", 1) for line in text.splitlines())
    assert lines["ResumeProgram"] == f"{tmp_path}/power-resume.sh"
    assert lines["ResumeFailProgram"] == f"{tmp_path}/power-resume-fail.sh"
    assert lines["SuspendTime"] == "300"
    assert lines["ResumeRate"] == "0"
    assert lines["SuspendExcNodes"] == "egpu1:1,gpu1"
    assert "DebugFlags" not in lines
