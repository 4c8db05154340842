"""The queue index gives exactly what filtering the whole queue gives, newest first."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from portal.jobs.queue import build, index_of
from slurm_plugins.client.models import Job, JobState

ACCOUNTS = ("nlp", "vision", "cs101", "root")
USERS = ("alice", "bob", "carol")


def job(job_id: int, user: str, account: str) -> Job:
    return Job(job_id, f"j{job_id}", user, account, "gpu", "normal", JobState.PENDING)


queues = st.lists(st.tuples(st.sampled_from(USERS), st.sampled_from(ACCOUNTS)), max_size=60).map(
    lambda rows: [job(i, u, a) for i, (u, a) in enumerate(rows, 1)][::-1]
)


@given(
    queues,
    st.sets(st.sampled_from((*ACCOUNTS, "gone"))),
    st.sampled_from((*USERS, "nobody")),
)
def test_visible_matches_a_filter_of_the_whole_queue(
    jobs: list[Job], accounts: set[str], user: str
) -> None:
    shuffled = jobs[::2] + jobs[1::2]
    expected = sorted(
        (j for j in jobs if j.account in accounts or j.user == user),
        key=lambda j: j.job_id,
        reverse=True,
    )
    seen = build(shuffled).visible(accounts, user)
    assert list(seen) == expected
    assert len(seen) == len(expected)
    assert seen[3:9] == expected[3:9]
    assert seen[100:] == []
    if expected:
        assert (seen[0], seen[-1]) == (expected[0], expected[-1])


def test_the_index_is_built_once_per_snapshot() -> None:
    snapshot = [job(2, "alice", "nlp"), job(1, "bob", "vision")]
    cache: dict[str, object] = {}
    first = index_of(snapshot, cache)
    assert index_of(snapshot, cache) is first
    assert index_of(list(snapshot), cache) is not first  # a new snapshot, a new index
    assert [j.job_id for j in first.newest_first] == [2, 1]
