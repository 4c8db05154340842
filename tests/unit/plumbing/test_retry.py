"""The one retry rule: tries until the result is good, waits that double, the last result kept."""

from __future__ import annotations

import pytest

from plumbing.retry import until_ok


class Tries:
    """A call that fails ``bad`` times, then succeeds; what was waited between."""

    def __init__(self, bad: int) -> None:
        self.bad = bad
        self.calls = 0
        self.waits: list[float] = []
        self.heard: list[tuple[int, str]] = []

    def __call__(self) -> str:
        self.calls += 1
        return "ok" if self.calls > self.bad else f"no {self.calls}"

    def run(self, attempts: int, first: float = 2.0) -> str:
        return until_ok(
            self,
            lambda result: result == "ok",
            attempts,
            first,
            self.waits.append,
            lambda attempt, result: self.heard.append((attempt, result)),
        )


def test_a_good_first_try_waits_for_nothing() -> None:
    tries = Tries(0)
    assert tries.run(3) == "ok"
    assert (tries.calls, tries.waits, tries.heard) == (1, [], [])


def test_failures_wait_first_then_twice_as_long() -> None:
    tries = Tries(3)
    assert tries.run(5) == "ok"
    assert tries.waits == [2.0, 4.0, 8.0]
    assert tries.heard == [(1, "no 1"), (2, "no 2"), (3, "no 3")]


def test_every_try_failed_gives_the_last_result_without_a_wait_after_it() -> None:
    tries = Tries(10)
    assert tries.run(3, first=0.5) == "no 3"
    assert tries.calls == 3
    assert tries.waits == [0.5, 1.0]
    assert [attempt for attempt, _ in tries.heard] == [1, 2, 3]


@pytest.mark.parametrize("attempts", [0, -2, 1])
def test_at_least_one_try(attempts: int) -> None:
    tries = Tries(10)
    assert tries.run(attempts) == "no 1"
    assert tries.waits == []


def test_an_exception_is_not_retried() -> None:
    calls: list[int] = []

    def broken() -> str:
        calls.append(1)
        raise OSError("refused")

    with pytest.raises(OSError, match="refused"):
        until_ok(broken, lambda result: result == "ok", 3, 1.0, lambda _: None)
    assert calls == [1]
