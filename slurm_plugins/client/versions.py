"""What differs between the Slurm releases AIPool runs on, in one place.

Each difference is a function of the release, ``(major, minor)`` as
:meth:`SlurmClient.release_tuple` reads it: ``(22, 5)`` on Debian 12, ``(24, 11)`` on
Debian 13. docs/slurm-versions.md tables them and says what AIPool does on each.
"""

from __future__ import annotations

Release = tuple[int, int]

#: The first release whose slurmrestd names its plugins by what they serve
#: (``openapi/slurmctld``) and takes the data parser apart (``-d v0.0.40``…).
SPLIT_REST_PLUGINS: Release = (23, 11)


def rest_plugins(release: Release) -> str:
    """slurmrestd's ``-s`` argument: the jobs and accounting endpoints."""
    if release >= SPLIT_REST_PLUGINS:
        return "openapi/slurmctld,openapi/slurmdbd"
    return "openapi/v0.0.38,openapi/dbv0.0.38"


#: The first release whose ``squeue --json`` honours squeue's filters, its default state
#: filter included: jobs that have ended but are still in slurmctld's memory are hidden
#: unless ``--states=all`` is given (22.05 lists them).
SQUEUE_JSON_FILTERS: Release = (23, 2)


def squeue_every_state(release: Release) -> list[str]:
    """What ``squeue --json`` needs to list ended jobs still in memory, as 22.05 does."""
    return ["--states=all"] if release >= SQUEUE_JSON_FILTERS else []


#: The first release with ``SelectTypeParameters=MULTIPLE_SHARING_GRES_PJ``: one job may take
#: shards from several cards of a node (``--gres=shard:40`` with 32 per card: 32 + 8). Before
#: it, one job's shards come from one card, and a larger request pends for good. A job that
#: fits on one card still gets one card: slurmctld looks for a single card first.
SHARDS_ACROSS_CARDS: Release = (23, 11)


def shards_across_cards(release: Release) -> bool:
    """May one job's shards come from several cards of a node on ``release``?"""
    return release >= SHARDS_ACROSS_CARDS


def select_type_parameters(release: Release) -> str:
    """The lab's ``SelectTypeParameters``: cores and memory, and shards across cards where
    the release has them."""
    extra = ",MULTIPLE_SHARING_GRES_PJ" if shards_across_cards(release) else ""
    return "CR_Core_Memory" + extra


#: From 23.02 a node's ``GRES_USED`` lists shards per card (``shard:8(8/32,0/32,…)``), and a
#: card keeps its mark while any shard job on it runs (seen on 24.11). 22.05 lists the cards
#: by index and clears a card's mark when one of its shard jobs ends, even while others stay.
SHARD_MARKS_KEPT: Release = (23, 2)


def keeps_shard_marks(release: Release) -> bool:
    """Does slurmctld keep a card marked used while any of its shard jobs runs?"""
    return release >= SHARD_MARKS_KEPT
