"""What differs between Slurm releases, as functions of ``(major, minor)``."""

from __future__ import annotations

import pytest

from slurm_plugins.client.versions import (
    keeps_shard_marks,
    rest_plugins,
    select_type_parameters,
    shards_across_cards,
    squeue_every_state,
)


@pytest.mark.parametrize(
    ("release", "plugins", "states", "across"),
    [
        ((22, 5), "openapi/v0.0.38,openapi/dbv0.0.38", [], False),
        ((23, 11), "openapi/slurmctld,openapi/slurmdbd", ["--states=all"], True),
        ((24, 11), "openapi/slurmctld,openapi/slurmdbd", ["--states=all"], True),
    ],
)
def test_each_difference_turns_at_its_release(
    release: tuple[int, int], plugins: str, states: list[str], across: bool
) -> None:
    assert rest_plugins(release) == plugins
    assert squeue_every_state(release) == states
    assert shards_across_cards(release) is across
    assert select_type_parameters(release).startswith("CR_Core_Memory")
    assert ("MULTIPLE_SHARING_GRES_PJ" in select_type_parameters(release)) is across


def test_squeue_filters_turn_at_23_02() -> None:
    assert squeue_every_state((22, 5)) == []
    assert squeue_every_state((23, 2)) == ["--states=all"]


def test_shard_marks_are_kept_from_23_02() -> None:
    assert not keeps_shard_marks((22, 5))
    assert keeps_shard_marks((23, 2))
    assert keeps_shard_marks((24, 11))
