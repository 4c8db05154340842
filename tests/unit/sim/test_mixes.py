"""Task lists of other mixes: real tasks of the trace, in the class shares asked for."""

from __future__ import annotations

from collections import Counter

import pytest

from sim.mixes import CLASSES, MIXES, class_of, mix
from sim.trace import Task


def test_a_mix_draws_real_tasks_in_the_shares_asked_for(tasks: list[Task]) -> None:
    present = {class_of(t) for t in tasks}
    weights = {c: (3.0 if c == "share" else 1.0) for c in present}
    many = tasks * 20
    out = mix(many, weights, seed=7)
    assert len(out) == len(many)
    assert [t.name for t in out] == [f"mix-{k:05d}" for k in range(len(out))]
    real = {t.request for t in tasks}
    assert all(t.request in real for t in out)
    counts = Counter(class_of(t) for t in out)
    total = sum(weights.values())
    for c, w in weights.items():
        assert abs(counts[c] / len(out) - w / total) < 0.06, (c, counts)
    assert mix(many, weights, seed=7) == out  # seeded
    assert mix(many, weights, seed=8) != out


def test_a_mix_says_what_it_cannot_draw(tasks: list[Task]) -> None:
    with pytest.raises(ValueError, match="unknown task classes"):
        mix(tasks, {"tiny": 1.0})
    with pytest.raises(ValueError, match="more than zero"):
        mix(tasks, {"cpu": 0.0})
    only = [t for t in tasks if class_of(t) == "one"]
    with pytest.raises(ValueError, match="has no tasks of class"):
        mix(only, {"multi": 1.0})


def test_the_benchmark_mixes_name_known_classes() -> None:
    assert all(
        set(w) <= set(CLASSES) and sum(w.values()) == pytest.approx(1) for w in MIXES.values()
    )
