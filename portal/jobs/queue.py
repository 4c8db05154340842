"""The queue, indexed once per Slurm snapshot: newest first, by account and by user.

The portal's Slurm port hands every page the same queue snapshot for
``SLURM_CACHE_SECONDS``; indexing it once per snapshot lets a request take the accounts and
the user it may see instead of filtering and sorting the whole queue (100,000 jobs: ~80 ms
of filtering and ~25 ms of sorting per request, per caller).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import Any

from slurm_plugins.client.models import Job

_JOB_ID = attrgetter("job_id")


@dataclass(frozen=True, slots=True)
class QueueIndex:
    newest_first: Sequence[Job]
    by_account: Mapping[str, Sequence[Job]]
    by_user: Mapping[str, Sequence[Job]]

    def visible(self, accounts: Iterable[str], user: str) -> Sequence[Job]:
        """Jobs charged to ``accounts`` or owned by ``user``, newest first."""
        wanted = set(accounts)
        parts = [self.by_account[a] for a in sorted(wanted) if a in self.by_account]
        own = [j for j in self.by_user.get(user, ()) if j.account not in wanted]
        if own:
            parts.append(own)
        if len(parts) == 1:
            return parts[0]
        # each part is already sorted: Timsort merges the runs in linear time
        return sorted(chain.from_iterable(parts), key=_JOB_ID, reverse=True)


def build(jobs: Iterable[Job]) -> QueueIndex:
    ordered = sorted(jobs, key=_JOB_ID, reverse=True)
    by_account: dict[str, list[Job]] = defaultdict(list)
    by_user: dict[str, list[Job]] = defaultdict(list)
    for job in ordered:
        by_account[job.account].append(job)
        by_user[job.user].append(job)
    return QueueIndex(tuple(ordered), dict(by_account), dict(by_user))


def index_of(jobs: Sequence[Job], cache: dict[str, Any]) -> QueueIndex:
    """The index of ``jobs``, reused while the port returns the same snapshot object.

    ``cache`` keeps the snapshot it indexed (so its identity cannot be reused by another
    list); a port that builds a new list per call is simply indexed per call."""
    hit = cache.get("aipool.queue_index")
    if hit is not None and hit[0] is jobs:
        index: QueueIndex = hit[1]
        return index
    index = build(jobs)
    cache["aipool.queue_index"] = (jobs, index)
    return index
