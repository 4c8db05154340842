"""The one retry rule of the services (tenacity): a call tried up to ``attempts`` times while
its result says it failed, waiting ``first_wait_s``, then twice that, and so on, between
tries. Webhook notices and alert channels deliver through it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_result,
    stop_after_attempt,
    wait_exponential,
)

T = TypeVar("T")


def until_ok(  # noqa: PLR0917 - the call and its test, then how often and how long
    call: Callable[[], T],
    ok: Callable[[T], bool],
    attempts: int,
    first_wait_s: float,
    sleep: Callable[[float], None],
    failed: Callable[[int, T], None] | None = None,
) -> T:
    """``call()`` until ``ok(result)``, at most ``attempts`` times (at least once); the last
    result, good or not. ``failed(attempt, result)`` hears of each failed try, the last one
    too (for the log); ``sleep`` waits (a test's fake clock)."""

    def heard(state: RetryCallState) -> None:
        if failed is not None and state.outcome is not None:
            failed(state.attempt_number, state.outcome.result())

    def last(state: RetryCallState) -> T:
        if state.outcome is None:  # tenacity calls it only after an attempt
            raise RuntimeError("no attempt was made")
        result: T = state.outcome.result()
        return result

    retrying = Retrying(
        retry=retry_if_result(lambda result: not ok(result)),
        stop=stop_after_attempt(max(1, attempts)),
        wait=wait_exponential(multiplier=first_wait_s, exp_base=2, min=0),
        sleep=sleep,
        after=heard,
        retry_error_callback=last,
        reraise=True,
    )
    return retrying(call)
