"""Choose the cluster for one job: a pure function of snapshots and the policy."""

from __future__ import annotations

from collections.abc import Sequence

from slurm_plugins.federation.model import ClusterSnapshot, Decision, NoClusterFits, Request
from slurm_plugins.federation.policy import FederationPolicy, Locality, Strategy


def pick_cluster(
    req: Request, snapshots: Sequence[ClusterSnapshot], policy: FederationPolicy
) -> Decision:
    """The cluster ``req`` should be submitted to (``sbatch -M``).

    1. drop clusters that do not answer, that the tenant may not use (policy, and Slurm's
       associations when the snapshot knows them), and, with ``locality: require``, those
       without the job's data label;
    2. of the rest, those with room *now* for the request's kind win over those that could
       only queue it; with ``locality: prefer``, a cluster holding the data wins next;
    3. then the strategy: ``spread`` (most free units of the kind), ``pack`` (fewest free
       units that still fit) or ``ordered`` (policy order); ties go by policy order, then name.

    Raises ``NoClusterFits`` when no cluster may, or ever could, run it.
    """
    reasons: dict[str, str] = {}
    candidates: list[ClusterSnapshot] = []
    for snap in snapshots:
        labels = snap.labels | policy.labels.get(snap.name, frozenset())
        if not snap.reachable:
            reasons[snap.name] = "not answering"
        elif not policy.allowed(req.account, snap.name):
            reasons[snap.name] = f"account {req.account} may not use it (policy)"
        elif snap.accounts is not None and req.account and req.account not in snap.accounts:
            reasons[snap.name] = f"account {req.account} has no association there"
        elif policy.locality is Locality.REQUIRE and req.data and req.data not in labels:
            reasons[snap.name] = f"does not hold data {req.data}"
        elif not snap.fits_ever(req):
            reasons[snap.name] = f"has no node that can ever run {req.describe()}"
        else:
            candidates.append(snap)
    if not candidates:
        raise NoClusterFits(req, reasons)

    def key(snap: ClusterSnapshot) -> tuple[int, int, int, int, str]:
        labels = snap.labels | policy.labels.get(snap.name, frozenset())
        now = 0 if snap.fits_now(req) else 1
        local = 0 if (req.data and req.data in labels) else 1
        free = snap.free_units(req)
        if policy.strategy is Strategy.SPREAD:
            score = -free
        elif policy.strategy is Strategy.PACK:
            score = free
        else:
            score = 0
        if now:  # nowhere to start now: the shortest queue is the best guess
            score = snap.pending
        return (now, local, score, policy.rank(snap.name), snap.name)

    ranked = sorted(candidates, key=key)
    best = ranked[0]
    for snap in ranked:
        free = snap.free_units(req)
        state = (
            f"room now ({free} free)" if snap.fits_now(req) else f"full now, {snap.pending} pending"
        )
        reasons[snap.name] = ("chosen: " if snap is best else "") + state
    ordered = {s.name: reasons[s.name] for s in ranked}
    ordered.update({k: v for k, v in reasons.items() if k not in ordered})
    return Decision(best.name, best.fits_now(req), ordered)
