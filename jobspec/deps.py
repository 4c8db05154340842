"""Order the specs of one submission so each is submitted after the specs it depends on."""

from __future__ import annotations

from collections.abc import Sequence

from jobspec.errors import SpecError
from jobspec.model import Spec


def submission_order(specs: Sequence[Spec]) -> list[Spec]:
    """Specs in an order where dependencies come first (stable: input order otherwise).

    Raises SpecError for duplicate names, dependencies on names not in the submission and
    cycles (named in full: ``a -> b -> a``).
    """
    index: dict[str, int] = {}
    problems: list[str] = []
    for i, spec in enumerate(specs):
        if spec.name in index:
            problems.append(
                f"jobs[{i}].name: {spec.name!r} is also the name of jobs[{index[spec.name]}]"
            )
        else:
            index[spec.name] = i
    for i, spec in enumerate(specs):
        for name in spec.spec_dependencies:
            if name == spec.name:
                problems.append(f"jobs[{i}].dependencies: a job cannot wait for itself")
            elif name not in index:
                problems.append(
                    f"jobs[{i}].dependencies: {name!r} is not a spec of this submission "
                    "(use a job id for jobs submitted before)"
                )
    if problems:
        raise SpecError(problems)
    if cycle := _find_cycle(specs, index):
        raise SpecError([f"dependencies: cycle {' -> '.join(cycle)}"])
    done: set[str] = set()
    order: list[Spec] = []
    while len(order) < len(specs):
        for spec in specs:
            if spec.name not in done and all(d in done for d in spec.spec_dependencies):
                order.append(spec)
                done.add(spec.name)
                break
    return order


def _find_cycle(specs: Sequence[Spec], index: dict[str, int]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 visiting, 2 done
    stack: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        stack.append(name)
        for dep in specs[index[name]].spec_dependencies:
            if state.get(dep) == 1:
                return [*stack[stack.index(dep) :], dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[name] = 2
        return None

    for spec in specs:
        if spec.name not in state and (found := visit(spec.name)):
            return found
    return None
