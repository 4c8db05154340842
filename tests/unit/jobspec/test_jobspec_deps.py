"""Dependencies between the specs of one submission: order, unknown names, cycles."""

from __future__ import annotations

import pytest

from jobspec.deps import submission_order
from jobspec.errors import SpecError
from jobspec.model import Spec
from tests.unit.jobspec.conftest import make


def s(name: str, *after: str | int) -> Spec:
    return make(name=name, dependencies={"afterok": list(after)} if after else None)


def names(specs: list[Spec]) -> list[str]:
    return [x.name for x in specs]


def test_dependencies_come_first_and_the_rest_keeps_its_order() -> None:
    order = submission_order([s("report", "train"), s("a"), s("train", "prep"), s("prep", 99)])
    assert names(order) == ["a", "prep", "train", "report"]


def test_a_diamond() -> None:
    order = submission_order([s("d", "b", "c"), s("c", "a"), s("b", "a"), s("a")])
    assert names(order) == ["a", "c", "b", "d"]


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        ([s("a"), s("a")], "jobs[1].name: 'a' is also the name of jobs[0]"),
        ([s("a", "ghost")], "jobs[0].dependencies: 'ghost' is not a spec of this submission"),
        ([s("a", "a")], "jobs[0].dependencies: a job cannot wait for itself"),
        ([s("a", "b"), s("b", "a")], "dependencies: cycle a -> b -> a"),
        ([s("x"), s("a", "c"), s("b", "a"), s("c", "b")], "dependencies: cycle a -> c -> b -> a"),
    ],
)
def test_refused(specs: list[Spec], message: str) -> None:
    with pytest.raises(SpecError) as info:
        submission_order(specs)
    assert any(m.startswith(message) for m in info.value.messages), info.value.messages
