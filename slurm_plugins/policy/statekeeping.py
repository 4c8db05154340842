"""The daemon's bookkeeping after a plan: pure, derived from the old state and the decisions.

What it keeps is what Slurm cannot tell us back: which holds are ours, the SiteFactor we
set, a job's node lists and QOS before we steered them, and when we signalled, requeued, warned or
released a job. Entries of jobs that left the queue are dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gres.placement_model import Workload
from slurm_plugins.policy.base import Verdict, released_by_daemon
from slurm_plugins.policy.plan import Action, Hold, JobAction, JobChange, NodeWeight
from slurm_plugins.policy.resources import hostlist
from slurm_plugins.policy.snapshot import DaemonState, Mark, Snapshot


def next_state(
    snap: Snapshot,
    *,
    changes: Sequence[JobChange],
    holds: Sequence[Hold],
    releases: Sequence[Hold],
    actions: Sequence[JobAction],
    verdicts: Mapping[int, Verdict],
    node_weights: Sequence[NodeWeight],
    task_models: Mapping[str, Workload] | None = None,
) -> DaemonState:
    s, now = snap.state, snap.now
    jobs = {j.job_id: j for j in snap.jobs}
    pending = {i for i, j in jobs.items() if j.pending}
    running = {i for i, j in jobs.items() if j.running}
    released = {h.job_id for h in releases}
    by_action: dict[Action, dict[int, Mark]] = {a: {} for a in Action}
    for a in actions:
        by_action[a.action][a.job_id] = Mark(now, a.reason)

    # A hold stays ours only while the job is still held: a record whose hold call never
    # happened (the daemon died in between) must not later claim a user's own hold.
    new_holds = {
        i: m for i, m in s.holds.items() if i in pending and jobs[i].held and i not in released
    }
    for h in holds:
        new_holds[h.job_id] = Mark(now, h.reason)
    for i, v in verdicts.items():  # adopt holds set at submission for jobs we manage (gangs)
        j = jobs[i]
        if v.vote is not None and v.vote.value == "hold" and j.held and released_by_daemon(j):
            new_holds.setdefault(i, Mark(now, v.reason))
    for i in by_action[Action.REQUEUE_HOLD]:
        new_holds[i] = by_action[Action.REQUEUE_HOLD][i]

    site = {i: v for i, v in s.site_factors.items() if i in pending}
    base_exc = {i: v for i, v in s.base_exc.items() if i in pending}
    base_req = {i: v for i, v in s.base_req.items() if i in pending}
    for c in changes:
        if c.site_factor is not None:
            site[c.job_id] = c.site_factor
        if c.exc_nodes is not None:
            base_exc.setdefault(c.job_id, hostlist(jobs[c.job_id].excluded_nodes))
        if c.req_nodes is not None:
            base_req.setdefault(c.job_id, hostlist(jobs[c.job_id].required_nodes))

    signalled = {i: m for i, m in s.signalled.items() if i in running}
    signalled.update(by_action[Action.SIGNAL])
    requeued = {i: m for i, m in s.requeued.items() if i in pending}
    requeued.update(by_action[Action.REQUEUE])
    requeued.update(by_action[Action.REQUEUE_HOLD])
    warned = {i: m for i, m in s.warned.items() if i in running}
    warned.update(by_action[Action.WARN])
    rel = {i: m for i, m in s.released.items() if i in jobs}
    rel.update({h.job_id: Mark(now, h.reason) for h in releases})
    weights = dict(s.base_weights)
    nodes = {n.name: n for n in snap.nodes}
    for w in node_weights:
        if w.node in nodes:
            weights.setdefault(w.node, nodes[w.node].weight)
    # A job's own QOS is kept while it is in the queue and not (yet) back in it; a move
    # that failed leaves a record equal to the job's QOS, dropped once nothing wants a move.
    base_qos = {
        i: q
        for i, q in s.base_qos.items()
        if i in jobs and (jobs[i].qos != q or (i in verdicts and verdicts[i].qos is not None))
    }
    for c in changes:
        if c.qos is not None:
            base_qos.setdefault(c.job_id, jobs[c.job_id].qos)
    targets = {i: t for i, t in s.targets.items() if i in pending}
    targets.update({a.job_id: a.target for a in actions if a.target is not None})
    return DaemonState(
        holds=new_holds,
        site_factors=site,
        base_req=base_req,
        base_exc=base_exc,
        signalled=signalled,
        requeued=requeued,
        warned=warned,
        released=rel,
        base_weights=weights,
        targets=targets,
        base_qos=base_qos,
        task_models=dict(task_models) if task_models else s.task_models,
    )
