"""The policy daemon's metrics: off unless configured, one cycle counted from its report."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from plumbing.address import Address
from plumbing.errors import ConfigError
from slurm_plugins.client import SlurmClient, SlurmError
from slurm_plugins.policy.config import DaemonConfig, MetricsConfig, parse_config
from slurm_plugins.policy.daemon import Daemon
from slurm_plugins.policy.metrics import PolicyMetrics, decisions, policy_of
from slurm_plugins.policy.plan import Action, Hold, JobAction, JobChange, NodeWeight, Plan
from tests.unit.metrics.scheme import check_scheme, values
from tests.unit.policy.test_policy_daemon import NOW, recorded

POLICIES = [{"name": "priority", "weight": 2}, {"name": "fair"}, {"name": "capacity"}]


def _config(tmp_path: Path, **extra: object) -> DaemonConfig:
    doc = {"state_dir": str(tmp_path / "state"), "policies": POLICIES, **extra}
    return parse_config(doc)


def test_metrics_are_off_unless_configured(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert config.metrics is None
    d = Daemon(config, SlurmClient(recorded([])), clock=lambda: NOW)  # type: ignore[arg-type]
    assert d.metrics is None
    assert d.cycle() is not None


def test_the_metrics_option(tmp_path: Path) -> None:
    config = _config(tmp_path, metrics={"address": "127.0.0.1:9101", "cluster": "lab"})
    assert config.metrics == MetricsConfig(Address("127.0.0.1", 9101), "lab")
    assert _config(tmp_path, metrics={"address": "[::1]:9101"}).metrics == MetricsConfig(
        Address("::1", 9101), "default"
    )


@pytest.mark.parametrize(
    ("metrics", "message"),
    [
        ({"address": "9101"}, "metrics.address: not an address: '9101'"),
        ({"address": "host.example:9101"}, "metrics.address: not an IP address"),
        ({"address": "127.0.0.1:99999"}, "metrics.address: port out of range"),
        ({}, "metrics.address:"),
        ({"address": "127.0.0.1:1", "port": 2}, "metrics.port:"),
    ],
)
def test_a_bad_metrics_option_names_the_field(
    tmp_path: Path, metrics: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError) as err:
        _config(tmp_path, metrics=metrics)
    assert any(m.startswith(message) for m in err.value.messages), err.value.messages


def test_decisions_by_policy_and_kind() -> None:
    plan = Plan(
        now=0.0,
        job_changes=(
            JobChange(1, site_factor=5, reason="priority: score 0.5"),
            JobChange(2, req_nodes="gpu1", start_now=True, reason="placement: best fit"),
            JobChange(3, exc_nodes="gpu2", reason="affinity: apart from 2"),
            JobChange(4, qos="low", reason="borrowing"),
        ),
        holds=(Hold(5, "gang: 3 of 4 members pending"),),
        releases=(Hold(6, "no policy holds it any more"),),
        actions=(JobAction(7, Action.REQUEUE, "move", policy="reschedule"),),
        node_weights=(NodeWeight("gpu1", 3, "placement: pack"),),
    )
    assert sorted(decisions(plan)) == sorted(
        [
            ("priority", "priority"),
            ("placement", "pin"),
            ("placement", "start"),
            ("affinity", "exclude"),
            ("engine", "qos"),
            ("gang", "hold"),
            ("engine", "release"),
            ("placement", "node_weight"),
            ("reschedule", "requeue"),
        ]
    )
    assert policy_of("jobs of user:bob") == "engine"  # unbounded text never becomes a label


def test_one_cycle_counted_and_the_pool_it_read(tmp_path: Path) -> None:
    config = _config(tmp_path, metrics={"address": "127.0.0.1:0", "cluster": "lab"})
    writes: list[tuple[tuple[str, ...], str | None]] = []
    d = Daemon(config, SlurmClient(recorded(writes)), clock=lambda: NOW)  # type: ignore[arg-type]
    report = d.cycle()
    assert report is not None
    assert report.result is not None
    m = cast(PolicyMetrics, d.metrics)
    fam = check_scheme(m.registry.collect())
    assert values(fam["aipool_policy_cycles"]) == {("ok",): 1.0}
    assert values(fam["aipool_policy_slurm_writes"]) == {(): float(report.result.calls)}
    assert report.result.calls == len(writes) == 1
    assert values(fam["aipool_policy_pending_jobs"]) == {(): float(len(report.plan.order))}
    kinds = values(fam["aipool_policy_decisions"])
    assert sum(kinds.values()) == len(decisions(report.plan)) > 0
    assert values(fam["aipool_policy_cycle_seconds"])[("+Inf",)] == 1.0
    # the pool families come from the same read
    assert values(fam["aipool_pool_cards"], cluster="lab", kind="gpu", state="used") == {
        ("a100",): 3.25
    }
    assert values(fam["aipool_jobs"], state="running", partition="npu") == {
        ("lab", "normal", "root"): 2.0
    }


def test_a_failed_cycle_is_counted(tmp_path: Path) -> None:
    config = _config(tmp_path, metrics={"address": "127.0.0.1:0"})
    d = Daemon(config, SlurmClient(recorded([])), clock=lambda: NOW)  # type: ignore[arg-type]

    def fail() -> None:
        raise SlurmError("controller down")

    d.cycle = fail  # type: ignore[method-assign,assignment]
    assert d.tick() is None
    fam = check_scheme(cast(PolicyMetrics, d.metrics).registry.collect())
    assert values(fam["aipool_policy_cycles"]) == {("failed",): 1.0}
    assert "aipool_pool_cards" not in fam  # nothing read yet: no pool figures
