"""fifo and priority classes: expected order and SiteFactors, table-driven."""

from __future__ import annotations

import pytest

from slurm_plugins.policy.base import Select
from slurm_plugins.policy.engine import plan
from tests.unit.policy.builders import NOW, config, gpu_node, job, pol, run, site_factors, snap

HOUR = 3600.0


@pytest.mark.parametrize(
    ("jobs", "expected"),
    [
        pytest.param(
            [job(3, submit=NOW - 10), job(1, submit=NOW - 30), job(2, submit=NOW - 20)],
            [1, 2, 3],
            id="submit-order",
        ),
        pytest.param([job(9, submit=NOW - 5), job(4, submit=NOW - 5)], [4, 9], id="tie-by-job-id"),
        pytest.param(
            [job(1, submit=NOW - 40 * 86400), job(2, submit=NOW - 50 * 86400)],
            [2, 1],
            id="older-than-window",
        ),
    ],
)
def test_fifo_order(jobs: list, expected: list[int]) -> None:
    p = run(snap(jobs, [gpu_node("gpu1")]), "fifo")
    assert list(p.order) == expected
    sf = site_factors(p)
    assert [sf[i] for i in expected] == sorted(sf.values(), reverse=True)


def test_fifo_site_factors_do_not_drift_between_cycles() -> None:
    s = snap([job(1, submit=NOW - 100), job(2, submit=NOW - 50)], [gpu_node("gpu1")])
    first = run(s, "fifo")
    later = snap(list(s.jobs), list(s.nodes), now=NOW + 600, state=first.state)
    assert run(later, "fifo").job_changes == ()


@pytest.mark.parametrize(
    ("jobs", "now", "expected"),
    [
        pytest.param(
            [
                job(1, qos="low", submit=NOW - 60),
                job(2, qos="normal", submit=NOW - 30),
                job(3, qos="high", submit=NOW - 10),
            ],
            NOW,
            [3, 2, 1],
            id="classes",
        ),
        pytest.param(
            [job(1, qos="low", submit=NOW - 2 * HOUR - 1), job(2, qos="normal", submit=NOW - 30)],
            NOW,
            [1, 2],
            id="low-aged-two-hours-catches-up-with-normal",
        ),
        pytest.param(
            [job(1, qos="low", submit=NOW - 4 * HOUR - 1), job(2, qos="high", submit=NOW - 30)],
            NOW,
            [1, 2],
            id="low-aged-four-hours-beats-fresh-high",
        ),
        pytest.param(
            [job(1, qos="low", submit=NOW - HOUR + 1), job(2, qos="normal", submit=NOW - 30)],
            NOW,
            [2, 1],
            id="aging-in-steps",
        ),
        pytest.param(
            [job(1, qos="weird", submit=NOW - 60), job(2, qos="low", submit=NOW - 30)],
            NOW,
            [1, 2],
            id="unknown-qos-is-medium",
        ),
    ],
)
def test_priority_classes_with_aging(jobs: list, now: float, expected: list[int]) -> None:
    p = run(snap(jobs, [gpu_node("gpu1")], now=now), "priority")
    assert list(p.order) == expected


def test_low_work_is_never_starved() -> None:
    """However many fresh high jobs keep arriving, an old enough low job goes first."""
    low = job(1, qos="low", submit=NOW - 5 * HOUR)
    highs = [job(100 + i, qos="high", submit=NOW - i) for i in range(50)]
    p = run(snap([low, *highs], [gpu_node("gpu1")]), "priority")
    assert p.order[0] == 1


def test_weighted_scores_and_reason() -> None:
    jobs = [job(1, qos="low", submit=NOW - 100), job(2, qos="high", submit=NOW - 10)]
    p = run(snap(jobs, [gpu_node("gpu1")]), pol("fifo", weight=1), pol("priority", weight=3))
    assert list(p.order) == [2, 1]
    why = dict(p.reasons)[2][0]
    assert why.startswith("score ")
    assert "priority 1.000 x3" in why
    assert "SiteFactor" in why


def test_site_factor_dead_band() -> None:
    s = snap([job(1, qos="low", submit=NOW)], [gpu_node("gpu1")], now=NOW)
    cfg = config("priority", site_factor_deadband=10)
    first = plan(s, cfg)
    assert site_factors(first) == {1: 0}
    # one aging step later the wish moved by 0.25 * scale: written again
    later = snap(list(s.jobs), list(s.nodes), now=NOW + HOUR, state=first.state)
    assert site_factors(plan(later, cfg)) == {1: 250_000}
    same = snap(list(s.jobs), list(s.nodes), now=NOW + HOUR + 60, state=first.state)
    assert site_factors(plan(same, cfg)) == {1: 250_000}


def test_user_held_jobs_are_left_alone() -> None:
    j = job(1, held=True, reason="JobHeldUser")
    p = run(snap([j], [gpu_node("gpu1")]), "fifo")
    assert p.job_changes == ()
    assert p.releases == ()


def test_only_configured_partitions_are_steered() -> None:
    jobs = [job(1, partition="gpu"), job(2, partition="cpu")]
    p = run(snap(jobs, [gpu_node("gpu1")]), "fifo", select=Select(partitions=("gpu",)))
    assert set(site_factors(p)) == {1}


def test_plan_is_deterministic_and_pure() -> None:
    s = snap([job(i, qos=["low", "normal", "high"][i % 3]) for i in range(30)], [gpu_node("gpu1")])
    assert run(s, "priority", "fifo") == run(s, "priority", "fifo")
