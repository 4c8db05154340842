"""``plan(snapshot, config) -> Plan``: the pure heart of the policy daemon.

1. **Score** every managed pending job: the weighted mean of the policies' scores.
2. **Order** by score, ties by submit time, then job id.
3. **Admit** in that order: tiered votes decide hold or start; the first ``lookahead`` jobs
   that may start are reserved in a scratch :class:`ClusterView`, so later decisions (a gang,
   an anti-affinity group) see the room earlier jobs will take.
4. **Victims**: running jobs to warn, signal, requeue or cancel; node weights.
5. **Diff** against the snapshot: only changes go into the plan (SiteFactor within a
   dead band of what we last set is left alone).
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from plumbing.notify import Notification
from slurm_plugins.policy import policies as _policies  # noqa: F401  (registers built-ins)
from slurm_plugins.policy.base import (
    REGISTRY,
    Context,
    Cycle,
    Policy,
    Select,
    Verdict,
    Vote,
    released_by_daemon,
)
from slurm_plugins.policy.cluster import ClusterView, first_fit
from slurm_plugins.policy.plan import (
    Action,
    Hold,
    JobAction,
    JobChange,
    NodeWeight,
    Plan,
)
from slurm_plugins.policy.resources import hostlist
from slurm_plugins.policy.snapshot import DaemonState, JobInfo, Mark, Snapshot
from slurm_plugins.policy.statekeeping import next_state
from translations import N_, Message


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    name: str
    weight: float = 1.0
    tier: int = 0
    args: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EngineConfig:
    policies: tuple[PolicyConfig, ...] = (PolicyConfig("fifo"),)
    #: Which jobs are steered (by partition, account, name prefix; default all).
    select: Select = field(default_factory=Select)
    #: SiteFactor of a job with combined score 1.0. Far above Slurm's other priority terms
    #: (QOS 10000, age and fair-share 1000 in the lab), so the policies' order holds and
    #: those terms only break ties.
    site_factor_scale: int = 1_000_000
    #: A SiteFactor we set is rewritten only when the wish moved further than this.
    site_factor_deadband: int = 2_000
    #: Pending jobs reserved in the scratch view per cycle (as Slurm's queue depth).
    lookahead: int = 300
    admins: tuple[str, ...] = ("root",)


def build_policies(config: EngineConfig) -> list[tuple[PolicyConfig, Policy]]:
    out = []
    for pc in config.policies:
        cls = REGISTRY.get(pc.name)
        if cls is None:
            raise KeyError(f"unknown policy {pc.name!r}; known: {', '.join(sorted(REGISTRY))}")
        out.append((pc, cls(**dict(pc.args))))
    return out


def plan(
    snapshot: Snapshot,
    config: EngineConfig,
    policies: Sequence[tuple[PolicyConfig, Policy]] | None = None,
) -> Plan:
    """The changes the configured policies want; pure (same input, same plan)."""
    # A cycle makes hundreds of thousands of small objects and no reference cycles worth
    # chasing: the cyclic collector's passes over a big snapshot would cost more than the
    # plan itself. It runs again when the plan is made.
    was = gc.isenabled()
    gc.disable()
    try:
        return _plan(snapshot, config, policies)
    finally:
        if was:
            gc.enable()


def _plan(
    snapshot: Snapshot,
    config: EngineConfig,
    policies: Sequence[tuple[PolicyConfig, Policy]] | None,
) -> Plan:
    pols = list(policies) if policies is not None else build_policies(config)
    ctx = Context(snapshot, select=config.select)
    cycle = Cycle(ClusterView(snapshot.nodes, ctx.running), first_fit)
    reasons: dict[int, list[str]] = {}

    scores = _scores(ctx, pols)
    site = _site_factors(ctx, config, scores)
    # Order by the SiteFactor Slurm will hold (the one we keep within the dead band), so the
    # queue order, and every decision taken along it, only moves when that is rewritten.
    order = sorted(ctx.pending, key=lambda j: (-site[j.job_id][0], j.submit, j.job_id))
    verdicts = _admit(order, ctx, cycle, pols, config.lookahead)
    actions = _merge_actions(
        a for _, p in pols if p.implements("victims") for a in p.victims(ctx, cycle)
    )
    weights = [w for _, p in pols if p.implements("nodes") for w in p.nodes(ctx, cycle)]

    changes, holds, releases = _job_diff(
        ctx, order, scores=scores, site=site, verdicts=verdicts, pols=pols, reasons=reasons
    )
    for a in actions:
        reasons.setdefault(a.job_id, []).append(a.reason)
    node_weights = tuple(
        w for w in weights if w.node in ctx.nodes and ctx.nodes[w.node].weight != w.weight
    )
    notes = _notifications(ctx, config, actions)
    new_state = next_state(
        snapshot,
        changes=changes,
        holds=holds,
        releases=releases,
        actions=actions,
        verdicts=verdicts,
        node_weights=node_weights,
        task_models=cycle.task_models,
    )
    return Plan(
        now=snapshot.now,
        job_changes=tuple(changes),
        holds=tuple(holds),
        releases=tuple(releases),
        actions=tuple(actions),
        node_weights=node_weights,
        notifications=tuple(notes),
        reasons={k: tuple(v) for k, v in reasons.items() if v},
        order=tuple(j.job_id for j in order),
        state=new_state,
        wake_at=min(cycle.wake) if cycle.wake else None,
    )


Scores = dict[int, tuple[float, tuple[float | None, ...]]]


def _scorers(pols: Sequence[tuple[PolicyConfig, Policy]]) -> list[tuple[float, Policy]]:
    return [(pc.weight, p) for pc, p in pols if p.implements("score") and pc.weight > 0]


def _scores(ctx: Context, pols: Sequence[tuple[PolicyConfig, Policy]]) -> Scores:
    """Per job: the weighted mean of the scores the policies gave (a policy may abstain on
    a job), and each policy's own score for the reason string."""
    scorers = _scorers(pols)
    out: Scores = {}
    for j in ctx.pending:
        total = weights = 0.0
        parts = []
        for w, p in scorers:
            v = p.score(j, ctx)
            parts.append(v)
            if v is not None:
                total += w * min(max(v, 0.0), 1.0)
                weights += w
        out[j.job_id] = (total / weights if weights else 0.0, tuple(parts))
    return out


def _admit(
    order: Sequence[JobInfo],
    ctx: Context,
    cycle: Cycle,
    pols: Sequence[tuple[PolicyConfig, Policy]],
    lookahead: int,
) -> dict[int, Verdict]:
    admitters = sorted(
        ((pc.tier, p.stage, i, p) for i, (pc, p) in enumerate(pols) if p.implements("admit")),
        key=lambda t: t[:3],
    )
    out: dict[int, Verdict] = {}
    reserved = 0
    nothing = Verdict()
    for job in order:
        by_tier: dict[int, list[Verdict]] = {}
        exclude: frozenset[str] = frozenset()
        pin: tuple[str, ...] = ()
        qos: str | None = None
        said = False
        for tier, _, _, p in admitters:
            v = p.admit(job, ctx, cycle)
            if v is None:
                continue
            said = True
            if v.exclude:
                exclude |= v.exclude
                cycle.exclude[job.job_id] = exclude
            pin = v.pin or pin
            qos = v.qos or qos
            if v.vote is not None:
                by_tier.setdefault(tier, []).append(v)
        if not said:  # most jobs of a long queue: no policy has a word about them
            verdict = nothing
        else:
            verdict = _decide(by_tier, exclude, pin)
            if qos is not None:
                verdict = replace(verdict, qos=qos)
        out[job.job_id] = verdict
        admitted = verdict.vote is not Vote.HOLD
        cycle.admitted[job.job_id] = admitted
        # jobs the placement daemon starts now are always reserved: later pins must see them
        if (
            admitted
            and (reserved < lookahead or job.deferred)
            and job.job_id not in cycle.view.placed
            and not job.not_yet
        ):
            reserved += 1
            cycle.view.place(job, exclude=exclude, require=pin, choose=cycle.chooser)
    return _together(out, order, cycle)


def _together(
    verdicts: dict[int, Verdict], order: Sequence[JobInfo], cycle: Cycle
) -> dict[int, Verdict]:
    """Members of one gang share one fate: if any policy holds one, all stay held (a
    gang admitted by room but one member held for quota would otherwise start in part)."""
    groups: dict[tuple[str, str], list[JobInfo]] = {}
    for j in order:
        if "gang" in j.labels:
            groups.setdefault((j.user, j.labels["gang"]), []).append(j)
    for (_, name), members in groups.items():
        held = [m for m in members if verdicts[m.job_id].vote is Vote.HOLD]
        if not held or len(held) == len(members):
            continue
        first = held[0]
        why = f"gang {name}: member {first.job_id} is held ({verdicts[first.job_id].reason})"
        for m in members:
            v = verdicts[m.job_id]
            if v.vote is not Vote.HOLD:
                verdicts[m.job_id] = Verdict(Vote.HOLD, why, v.exclude, v.pin, v.qos)
                if m.job_id in cycle.view.placed:
                    cycle.view.unreserve(m)
    return verdicts


def _decide(
    by_tier: Mapping[int, list[Verdict]], exclude: frozenset[str], pin: tuple[str, ...]
) -> Verdict:
    for tier in sorted(by_tier):
        votes = by_tier[tier]
        holds = [v for v in votes if v.vote is Vote.HOLD]
        if holds:
            return Verdict(Vote.HOLD, "; ".join(v.reason for v in holds if v.reason), exclude, pin)
        return Verdict(Vote.ADMIT, "; ".join(v.reason for v in votes if v.reason), exclude, pin)
    return Verdict(None, "", exclude, pin)


_STRENGTH = {a: i for i, a in enumerate(Action)}


def _merge_actions(actions: Iterable[JobAction]) -> list[JobAction]:
    """One action per job: the strongest wins, the reasons of all are kept."""
    best: dict[int, JobAction] = {}
    why: dict[int, list[str]] = {}
    for a in actions:
        why.setdefault(a.job_id, []).append(a.reason)
        cur = best.get(a.job_id)
        if cur is None or _STRENGTH[a.action] > _STRENGTH[cur.action]:
            best[a.job_id] = a
    return [
        replace(a, reason="; ".join(dict.fromkeys(why[a.job_id])))
        for a in sorted(best.values(), key=lambda a: a.job_id)
    ]


def _site_factors(
    ctx: Context, config: EngineConfig, scores: Scores
) -> dict[int, tuple[int, bool]]:
    """Per job: the SiteFactor it will have, and whether that must be written."""
    scale, band = config.site_factor_scale, config.site_factor_deadband
    last_set = ctx.state.site_factors
    out = {}
    for jid, (score, _) in scores.items():
        want = round(score * scale)
        last = last_set.get(jid)
        if last is None or abs(want - last) > band:
            out[jid] = (want, True)
        else:
            out[jid] = (last, False)
    return out


def _job_diff(
    ctx: Context,
    order: Sequence[JobInfo],
    *,
    scores: Scores,
    site: Mapping[int, tuple[int, bool]],
    verdicts: Mapping[int, Verdict],
    pols: Sequence[tuple[PolicyConfig, Policy]],
    reasons: dict[int, list[str]],
) -> tuple[list[JobChange], list[Hold], list[Hold]]:
    state = ctx.state
    scorers = _scorers(pols)
    changes, holds, releases = [], [], []
    for job in order:
        jid = job.job_id
        v = verdicts[jid]
        if v.reason:
            reasons.setdefault(jid, []).append(v.reason)
        score, parts = scores[jid]
        want_sf, stale = site[jid]
        sf = want_sf if scorers and stale else None
        exc, req = _steer(job, v, state)
        qos = _qos(job, v, state)
        start = job.deferred and v.vote is not Vote.HOLD  # pinned (or not) in the same line
        if sf is not None or exc is not None or req is not None or qos is not None or start:
            why = _score_reason(score, parts, scorers, want_sf) if sf is not None else ""
            changes.append(JobChange(jid, sf, req, exc, why or v.reason, qos, start))
            if why:
                reasons.setdefault(jid, []).append(why)
        ours = jid in state.holds
        if v.vote is Vote.HOLD and not job.held:
            holds.append(Hold(jid, v.reason))
        elif v.vote is not Vote.HOLD and job.held and (ours or released_by_daemon(job)):
            releases.append(Hold(jid, v.reason or "no policy holds it any more"))
    return changes, holds, releases


def _steer(job: JobInfo, v: Verdict, state: DaemonState) -> tuple[str | None, str | None]:
    """ExcNodeList/ReqNodeList to write (None: already right); the user's own lists stay."""
    jid = job.job_id
    if not v.exclude and not v.pin and jid not in state.base_exc and jid not in state.base_req:
        return None, None  # never steered and nothing wanted: the job's lists are its own
    base_exc = state.base_exc.get(job.job_id, hostlist(job.excluded_nodes))
    base_req = state.base_req.get(job.job_id, hostlist(job.required_nodes))
    want_exc = hostlist(set(base_exc.split(",") if base_exc else ()) | v.exclude)
    want_req = hostlist(v.pin) if v.pin and not base_req else base_req
    exc = want_exc if want_exc != hostlist(job.excluded_nodes) else None
    req = want_req if want_req != hostlist(job.required_nodes) else None
    return exc, req


def _qos(job: JobInfo, v: Verdict, state: DaemonState) -> str | None:
    """The QOS to write (None: already right): the one a policy asked for, else the job's
    own one back when the daemon had moved it."""
    want = v.qos or state.base_qos.get(job.job_id)
    return want if want is not None and want != job.qos else None


def _score_reason(
    score: float,
    parts: Sequence[float | None],
    scorers: Sequence[tuple[float, Policy]],
    site_factor: int,
) -> str:
    shown = ", ".join(
        f"{p.name} {v:.3f} x{w:g}"
        for (w, p), v in zip(scorers, parts, strict=True)
        if v is not None
    )
    return f"score {score:.3f} ({shown}) -> SiteFactor {site_factor}"


_TITLES = {
    Action.WARN: N_("Job %(job)s (%(name)s): a warning"),
    Action.REQUEUE: N_("Job %(job)s (%(name)s) was requeued"),
    Action.REQUEUE_HOLD: N_("Job %(job)s (%(name)s) was requeued and held"),
    Action.CANCEL: N_("Job %(job)s (%(name)s) was cancelled"),
}


def _notifications(
    ctx: Context, config: EngineConfig, actions: Sequence[JobAction]
) -> list[Notification]:
    out = []
    for a in actions:
        job = ctx.jobs.get(a.job_id)
        if job is None or a.action is Action.SIGNAL:
            continue
        users = tuple(dict.fromkeys((job.user, *config.admins)))
        verb = {
            Action.WARN: "warning",
            Action.REQUEUE: "requeued",
            Action.REQUEUE_HOLD: "requeued and held",
            Action.CANCEL: "cancelled",
        }[a.action]
        out.append(
            Notification(
                a.policy or a.action.value,
                a.job_id,
                users,
                f"job {a.job_id} ({job.name}) {verb}",
                a.reason,
                title=Message.of(_TITLES[a.action], job=a.job_id, name=job.name),
                body=a.note,
            )
        )
    return out


__all__ = ["EngineConfig", "Mark", "NodeWeight", "PolicyConfig", "plan"]
