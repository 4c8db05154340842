"""The health checker's metrics: verdicts by state and finding, drained nodes, its checks;
served only where ``health.metrics`` says."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import pytest

from plumbing.address import parse_address
from plumbing.errors import ConfigError
from plumbing.notify import LogSink
from slurm_plugins.client import CommandError, SlurmClient
from slurm_plugins.health.checker import Checker
from slurm_plugins.health.metrics import HealthMetrics
from slurm_plugins.policy.config import parse_config
from tests.unit.health.builders import CONFIG, NOW, gpus, seen
from tests.unit.metrics.scheme import check_scheme, values


@dataclass(frozen=True)
class State:
    value: str


@dataclass
class FakeNode:
    name: str
    flags: tuple[str, ...] = ()
    reason: str = ""
    state: Any = field(default_factory=lambda: State("IDLE"))

    def gres_total(self, kind: str) -> int:
        return 4 if kind == "gpu" else 0


class FakeSlurm:
    """Three nodes; a drain of ``refuse`` fails."""

    dry_run = False

    def __init__(self, refuse: str = "") -> None:
        self.refuse = refuse
        self.writes: list[tuple[str, str]] = []

    def nodes(self) -> list[FakeNode]:
        return [FakeNode("gpu1"), FakeNode("gpu2"), FakeNode("gpu3"), FakeNode("gpu4")]

    def update_node(self, node: str, *, state: str, reason: str | None = None) -> None:
        if node == self.refuse:
            raise CommandError("refused", argv=["scontrol"], returncode=1)
        self.writes.append((node, state))


def checker(tmp_path: Path, slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch) -> Checker:
    reports = {
        "gpu1": seen("gpu1", devices=gpus(g1=("xid 79",))),  # failing: drained
        "gpu2": seen("gpu2"),  # healthy
        "gpu4": seen("gpu4", devices=gpus(g0=("xid 48",))),  # failing: its drain refused
    }  # gpu3 sent no report: unknown
    monkeypatch.setattr("slurm_plugins.health.checker.read_reports", lambda _d: reports)
    config = replace(CONFIG, reports=tmp_path, max_drained=1.0)
    return Checker(
        config,
        cast(SlurmClient, slurm),
        LogSink(),
        state_dir=tmp_path,
        clock=lambda: NOW,
    )


def test_verdicts_and_drained_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slurm = FakeSlurm(refuse="gpu4")
    metrics = HealthMetrics("lab")
    assert "aipool_health_nodes" not in {f.name for f in metrics.registry.collect()}
    metrics.checked(checker(tmp_path, slurm, monkeypatch).check(), 0.2)
    assert slurm.writes == [("gpu1", "DRAIN")]
    fam = check_scheme(metrics.registry.collect())
    assert values(fam["aipool_health_nodes"], cluster="lab") == {
        ("failing",): 2,
        ("healthy",): 1,
        ("unknown",): 1,
    }
    findings = values(fam["aipool_health_findings"], cluster="lab")
    assert findings[("device_error",)] == 2
    assert findings[("no_report",)] == 1
    assert findings[("clock_skew",)] == 0  # every kind shown, zero where none
    assert values(fam["aipool_health_node_failing"], cluster="lab") == {
        ("gpu1",): 1,
        ("gpu2",): 0,
        ("gpu3",): 0,
        ("gpu4",): 1,
    }
    # the refused drain is not held: the next check tries it again
    assert values(fam["aipool_health_node_drained"], node="gpu4") == {("lab",): 0}
    assert values(fam["aipool_health_drained_nodes"]) == {("lab",): 1}
    assert values(fam["aipool_health_drains"]) == {(): 1}
    assert values(fam["aipool_health_failed_writes"]) == {(): 1}
    assert values(fam["aipool_health_checks"]) == {("ok",): 1}
    metrics.failed()
    fam = check_scheme(metrics.registry.collect())
    assert values(fam["aipool_health_checks"]) == {("ok",): 1, ("failed",): 1}


def test_served_only_where_configured() -> None:
    base = {"policies": [{"name": "fifo"}], "samples": {"dir": "/shared/samples"}}
    health = parse_config({**base, "health": {}}).health
    assert health is not None
    assert health.metrics is None
    cfg = parse_config({**base, "health": {"metrics": "127.0.0.1:9103"}})
    assert cfg.health is not None
    assert cfg.health.metrics == parse_address("127.0.0.1:9103")
    with pytest.raises(ConfigError) as err:
        parse_config({**base, "health": {"metrics": "checker.example:9103"}})
    assert "health.metrics: not an IP address: 'checker.example'" in "\n".join(err.value.messages)


def test_a_check_slurm_failed_is_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from slurm_plugins.health.cli import _check_once

    class Down(FakeSlurm):
        def nodes(self) -> list[FakeNode]:
            raise CommandError("slurmctld down", argv=["sinfo"], returncode=1)

    metrics = HealthMetrics("lab")
    _check_once(checker(tmp_path, Down(), monkeypatch), metrics)
    _check_once(checker(tmp_path, FakeSlurm(), monkeypatch), metrics)
    fam = check_scheme(metrics.registry.collect())
    assert values(fam["aipool_health_checks"]) == {("failed",): 1, ("ok",): 1}
    hist = fam["aipool_health_check_seconds"].samples
    assert [s.value for s in hist if s.name.endswith("_count")] == [1]
