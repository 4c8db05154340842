"""Switch-aware placement: gangs under one switch (the tightest), else the fewest; single-node
work kept off idle switches; first fit as the baseline, table-driven with small builders."""

from __future__ import annotations

import pytest

from gres.placement_topology import (
    GANG_PLACERS,
    Gang,
    SwitchNode,
    gang_first_fit,
    gang_same_switch,
    idle_share,
    single_first_fit,
    single_off_big_switches,
    switch_bias,
    switches_used,
)


def cluster(*layout: str) -> list[SwitchNode]:
    """``"leaf1: a=8 b=3"``: nodes of 8 cards, with that many free, under ``leaf1``
    (``-`` for none)."""
    out = []
    for spec in layout:
        switch, _, members = spec.partition(":")
        for item in members.split():
            name, _, free = item.partition("=")
            out.append(SwitchNode(name, None if switch == "-" else switch, int(free), 8))
    return out


# nodes named so that first fit takes one from each switch
INTERLEAVED = cluster("leaf1: a1=8 a3=8 a5=8", "leaf2: a2=8 a4=8")


@pytest.mark.parametrize(
    ("nodes", "gang", "first_fit", "same_switch"),
    [
        (INTERLEAVED, Gang(2, 8), ("a1", "a2"), ("a2", "a4")),  # leaf2 is the tighter fit
        (INTERLEAVED, Gang(3, 8), ("a1", "a2", "a3"), ("a1", "a3", "a5")),
        (INTERLEAVED, Gang(4, 8), ("a1", "a2", "a3", "a4"), ("a1", "a3", "a5", "a2")),
        (INTERLEAVED, Gang(6, 8), None, None),
        # inside a switch the fullest fitting nodes first: idle nodes stay idle
        (cluster("s: b1=8 b2=4 b3=5"), Gang(2, 4), ("b1", "b2"), ("b2", "b3")),
        # nodes without a switch are never "one switch" for a gang
        (cluster("-: c1=8 c2=8", "s: c3=8 c4=8"), Gang(2, 8), ("c1", "c2"), ("c3", "c4")),
        (cluster("s: d1=2 d2=8"), Gang(2, 4), None, None),
    ],
)
def test_gangs(
    nodes: list[SwitchNode],
    gang: Gang,
    first_fit: tuple[str, ...] | None,
    same_switch: tuple[str, ...] | None,
) -> None:
    assert gang_first_fit(gang, nodes) == first_fit
    assert gang_same_switch(gang, nodes) == same_switch
    assert GANG_PLACERS["same-switch"](gang, nodes) == same_switch


def test_same_switch_spans_as_few_switches_as_it_can() -> None:
    nodes = cluster("l1: e1=8", "l2: e2=8 e3=8 e4=8", "l3: e5=8 e6=8")
    chosen = gang_same_switch(Gang(5, 8), nodes)
    assert chosen is not None
    assert switches_used(chosen, nodes) == 2
    assert switches_used(gang_first_fit(Gang(5, 8), nodes) or (), nodes) == 3


def test_single_node_work_goes_to_the_switch_already_broken_into() -> None:
    nodes = cluster("leaf1: f1=8 f2=8", "leaf2: f3=8 f4=6")
    assert idle_share(nodes) == {"leaf1": 1.0, "leaf2": 0.5}
    assert single_first_fit(1, nodes) == "f1"
    assert single_off_big_switches(1, nodes) == "f4"  # best fit on the busier switch
    assert single_off_big_switches(7, nodes) == "f3"  # f4 has no room for 7
    assert single_off_big_switches(9, nodes) is None
    node = {n.name: n for n in nodes}
    assert switch_bias(node["f3"], nodes) == 0.5
    assert switch_bias(node["f1"], nodes) == 0.0
