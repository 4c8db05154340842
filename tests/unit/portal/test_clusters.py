"""The clusters view: every cluster slurmdbd knows, for platform and domain admins only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from portal.slurm import ClusterRead, ClusterSlurm
from slurm_plugins.client import SlurmClient, SlurmError
from slurm_plugins.client.models import JobState
from slurm_plugins.client.runner import Completed
from tests.unit.portal.conftest import Env
from tests.unit.portal.fakes import DATA
from tests.unit.portal.test_pages import login

DOWN = "Unable to contact slurm controller (connect failure)"


@pytest.fixture
def two_clusters(env: Env) -> Env:
    """``alpha`` answers with the recorded nodes, two running jobs and one pending; ``beta``
    does not answer."""
    s = env.slurm
    for state in (JobState.RUNNING, JobState.RUNNING, JobState.PENDING):
        s.add_job("alice", "nlp", state)
    s.clusters_list = [
        ClusterRead("beta", error=DOWN),
        ClusterRead("alpha", tuple(s.nodes_list), tuple(s.jobs())),
    ]
    return env


def amount(total: float, used: float, free: float, unavailable: float = 0.0) -> dict[str, float]:
    return {"total": total, "used": used, "free": free, "unavailable": unavailable}


# the recorded nodes: gpu1 holds 2 whole cards and 8 shards (on card 2), gpu2 32 shards (on
# card 0), npu1 3 of its 8 NPUs: counted as every page counts them (client.capacity)
ALPHA_CAPACITY = {
    "gpus": {**amount(8, 3.25, 4.75), "whole_free": 4},  # a card with shards is not whole
    "shards": amount(256, 40, 152, 64),  # the 2 cards taken whole hold 64 shards: not free
    "npus": {**amount(8, 3, 5), "whole_free": 5},
    "vnpus": amount(0, 0, 0),
    "cpus": amount(64, 7, 57),
}
ZERO = {**amount(0, 0, 0), "whole_free": 0}


SHOWN = ("name", "reachable", "error", "nodes", "states", "running", "pending")
SHOWN += ("gpus", "shards", "npus", "vnpus", "cpus")


def summary(cluster: dict[str, object]) -> dict[str, object]:
    return {k: cluster[k] for k in SHOWN}


ALPHA = {
    "name": "alpha",
    "reachable": True,
    "error": "",
    "nodes": 4,
    "states": {"IDLE": 1, "MIXED": 3},
    **ALPHA_CAPACITY,
    "running": 2,
    "pending": 1,
}
BETA = {
    "name": "beta",
    "reachable": False,
    "error": DOWN,
    "nodes": 0,
    "states": {},
    "gpus": ZERO,
    "shards": amount(0, 0, 0),
    "npus": ZERO,
    "vnpus": amount(0, 0, 0),
    "cpus": amount(0, 0, 0),
    "running": 0,
    "pending": 0,
}


@pytest.mark.parametrize("user", ["admin", "erin", "tina"])
def test_admins_see_every_cluster(two_clusters: Env, user: str) -> None:
    r = two_clusters.api(user).get("/api/v1/clusters")
    assert r.status_code == 200, r.json
    assert [summary(c) for c in r.json] == [ALPHA, BETA]
    # the same counts as the pool's own endpoint: one computation
    pool = two_clusters.api(user).get("/api/v1/cluster").json
    assert {k: pool[k] for k in ALPHA_CAPACITY} == ALPHA_CAPACITY


def test_members_are_refused(two_clusters: Env) -> None:
    r = two_clusters.api("alice").get("/api/v1/clusters")
    assert r.status_code == 403
    assert r.json["code"] == 403


def test_without_a_cluster_list_slurm_is_unavailable(env: Env) -> None:
    def broken() -> list[ClusterRead]:
        raise SlurmError(DOWN, argv=("sacctmgr", "show", "cluster"), returncode=1)

    env.slurm.clusters = broken  # type: ignore[method-assign]
    r = env.api("admin").get("/api/v1/clusters")
    assert r.status_code == 503


@pytest.mark.parametrize("user", ["admin", "erin"])
def test_page_lists_clusters_and_which_do_not_answer(two_clusters: Env, user: str) -> None:
    client = login(two_clusters, user)
    html = client.get("/clusters").get_data(as_text=True)
    assert "alpha" in html
    assert "beta" in html
    assert "not answering" in html
    assert DOWN in html
    assert "Idle 1, Partly in use 3" in html
    assert "3.25 / 4.75 / 8" in html  # GPU cards in use / free / total
    assert "(4 whole cards free)" in html
    assert "40 / 152 / 256" in html  # shards
    assert "3 / 5 / 8" in html  # NPU cards
    assert "7 / 57 / 64" in html  # CPUs
    assert 'href="/clusters"' in client.get("/").get_data(as_text=True)


def test_page_refuses_members(two_clusters: Env) -> None:
    client = login(two_clusters, "alice")
    assert client.get("/clusters").status_code == 403
    assert 'href="/clusters"' not in client.get("/").get_data(as_text=True)


class _Runner:
    """slurmdbd knows ``alpha`` and ``beta``; reads with ``-M beta`` fail."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def __call__(
        self,
        argv: Sequence[str],
        *,
        input: str | None = None,
        timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
    ) -> Completed:
        self.calls.append(tuple(argv))
        if "beta" in argv:
            return Completed(tuple(argv), 1, "", DOWN)
        if argv[0] == "sacctmgr":
            return Completed(tuple(argv), 0, "alpha\nbeta\n", "")
        if argv[0] == "sinfo" and "--version" in argv:
            return Completed(tuple(argv), 0, (DATA / "version.txt").read_text(), "")
        files = {"squeue": "squeue.json", "sinfo": "sinfo.json"}
        return Completed(tuple(argv), 0, (DATA / files[argv[0]]).read_text(), "")


def test_the_port_asks_each_cluster_by_name() -> None:
    runner = _Runner()
    reads = ClusterSlurm(SlurmClient(runner), None, None).clusters()
    assert [r.name for r in reads] == ["alpha", "beta"]
    alpha, beta = reads
    assert alpha.error is None
    assert len(alpha.nodes) == 4
    assert alpha.jobs
    assert beta.error
    assert not beta.nodes
    assert not beta.jobs
    asked = {c[c.index("-M") + 1] for c in runner.calls if "-M" in c}
    assert asked == {"alpha", "beta"}
