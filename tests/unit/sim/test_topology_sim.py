"""The switch simulator: gangs under one switch counted right, the switch wait honoured, every
job finishing, and the same stream replayed identically."""

from __future__ import annotations

from sim.topology import SwitchCluster, TopoJob, simulate, synthetic_jobs

SMALL = SwitchCluster(switches=2, nodes_per_switch=2, cards=8)


def test_nodes_are_named_rack_by_rack() -> None:
    assert [(n.name, n.switch) for n in SMALL.nodes()] == [
        ("n1", "leaf1"),
        ("n2", "leaf1"),
        ("n3", "leaf2"),
        ("n4", "leaf2"),
    ]


def test_a_gang_behind_one_card_of_work() -> None:
    # one card busy on n1 for 100 s; then a 2-node gang of 8 cards: first fit takes n2 and n3
    # (two switches), same-switch takes n3 and n4
    jobs = [TopoJob("one", 0.0, 100.0, 1, 1), TopoJob("gang", 1.0, 50.0, 2, 8)]
    first = simulate(SMALL, jobs, "first-fit")
    same = simulate(SMALL, jobs, "same-switch")
    assert (first.gangs, first.one_switch, first.switches_per_gang) == (1, 0, 2.0)
    assert (same.gangs, same.one_switch, same.switches_per_gang) == (1, 1, 1.0)
    assert first.finished == same.finished == 2


def test_the_switch_wait_holds_a_gang_until_a_switch_frees() -> None:
    # first fit: "a" on n1 until 100 s; gang "b" takes n2+n3 at once (two switches), and gang
    # "c" (at 10 s) n1+n4 when "a" ends. With a long wait both hold out for one switch: "b"
    # runs on n1+n2 when "a" ends, "c" on n3+n4 beside it
    jobs = [
        TopoJob("a", 0.0, 100.0, 1, 8),
        TopoJob("b", 0.0, 1000.0, 2, 8),
        TopoJob("c", 10.0, 50.0, 2, 8),
    ]
    spans = simulate(SMALL, jobs, "first-fit")
    waits = simulate(SMALL, jobs, "first-fit", switch_wait_s=2000.0)
    assert (spans.gangs, spans.one_switch) == (2, 0)
    assert (waits.gangs, waits.one_switch) == (2, 2)
    assert waits.mean_wait_s > spans.mean_wait_s
    gave_up = simulate(SMALL, jobs, "first-fit", switch_wait_s=30.0)
    assert gave_up.one_switch == 0  # the wait was over before a switch was free: it spans
    assert gave_up.finished == 3


def test_a_seeded_stream_is_reproducible_and_switch_aware_placement_wins() -> None:
    cluster = SwitchCluster(switches=4, nodes_per_switch=4, cards=8)
    jobs = synthetic_jobs(7, 300, cluster)
    assert jobs == synthetic_jobs(7, 300, cluster)
    assert any(j.nodes > 1 for j in jobs)
    first = simulate(cluster, jobs, "first-fit")
    same = simulate(cluster, jobs, "same-switch")
    assert first.finished == same.finished == len(jobs)
    assert same.share_one_switch > first.share_one_switch
    assert same.switches_per_gang < first.switches_per_gang
