"""Evaluating alert rules: what each rule observes, and each subject's episode.

A cycle gathers the :class:`Facts` once (this month's card-hours per domain, project and
user; each pool's cards; Prometheus on demand), then per rule and subject:

* the condition starts to hold → ``pending`` (no message);
* it has held for the rule's ``for`` → the firing message, ``firing``;
* it keeps holding → nothing more;
* it stops holding → the recovery message if it had fired; the state row goes (ok).

A firing message that no channel took stays ``pending`` and is tried again next cycle. A
rule whose query fails (Prometheus down) is skipped for the cycle: its states stay as they
were rather than reading as recovered.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
from sqlalchemy import Connection, Engine, delete, insert, select, update

from accounting.alert_channels import FIRE, RECOVER, Alert
from accounting.alert_models import AlertState
from accounting.alert_rules import Level, Rule
from accounting.report import Dim, build, month_start, next_month
from slurm_plugins.client.models import Node

log = logging.getLogger("aipool.accounting.alerts")

Samples = list[tuple[dict[str, str], float]]


class QueryError(RuntimeError):
    """A rule's query could not be answered this cycle."""


@dataclass(frozen=True, slots=True)
class Observation:
    """One subject of a rule and its value; ``level`` and ``name`` are the tenant it is about
    (``platform`` and empty for pools and metrics)."""

    subject: str
    value: float
    level: Level = Level.PLATFORM
    name: str = ""
    context: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PoolCards:
    total: int
    used: int
    pending: int = 0


@dataclass(frozen=True, slots=True)
class Facts:
    month: datetime
    #: this month's card-hours by level, then by domain, project (Slurm account) or user name
    card_hours: Mapping[Level, Mapping[str, Decimal]] = field(default_factory=dict)
    #: (partition, GPU or NPU) -> its cards
    pools: Mapping[tuple[str, str], PoolCards] = field(default_factory=dict)
    #: a PromQL instant query's samples; None where no Prometheus is configured
    metric: Callable[[str], Samples] | None = None
    #: each billing account's money left (balance less this month's charges so far)
    balances: Mapping[str, Decimal] = field(default_factory=dict)


def usage_facts(conn: Connection, now: datetime) -> dict[Level, dict[str, Decimal]]:
    start, end = month_start(now), next_month(now)
    return {
        level: {ln.key: ln.card_hours for ln in build(conn, start, end, dim).lines}
        for level, dim in (
            (Level.DOMAIN, Dim.DOMAIN),
            (Level.PROJECT, Dim.PROJECT),
            (Level.USER, Dim.USER),
        )
    }


def pool_facts(
    nodes: Iterable[Node], pending: Mapping[str, int] | None = None
) -> dict[tuple[str, str], PoolCards]:
    """Cards per pool (partition) and kind; a GPU with any shard taken is not free."""
    totals: dict[tuple[str, str], list[int]] = {}
    for n in nodes:
        if not n.available:
            continue
        gpus = n.gres_total("gpu")
        spg = (n.gres_total("shard") // gpus) if gpus else 0
        shard_cards = math.ceil(n.gres_in_use("shard") / spg) if spg else 0
        for p in n.partitions:
            for kind, total, used in (
                ("GPU", gpus, n.gres_in_use("gpu") + shard_cards),
                ("NPU", n.gres_total("npu"), n.gres_in_use("npu")),
            ):
                if total:
                    acc = totals.setdefault((p, kind), [0, 0])
                    acc[0] += total
                    acc[1] += min(used, total)
    return {
        key: PoolCards(total, used, (pending or {}).get(key[0], 0))
        for key, (total, used) in sorted(totals.items())
    }


def prometheus(client: httpx.Client, url: str) -> Callable[[str], Samples]:
    """A PromQL instant query against ``url`` (``…/api/v1/query``): a vector's samples, or a
    scalar as one sample without labels."""

    def query(promql: str) -> Samples:
        try:
            res = client.get(url.rstrip("/") + "/api/v1/query", params={"query": promql})
            doc = res.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise QueryError(f"Prometheus: {type(exc).__name__}") from exc
        if res.status_code != 200 or doc.get("status") != "success":
            raise QueryError(f"Prometheus: HTTP {res.status_code}: {doc.get('error', '')[:200]}")
        data = doc.get("data") or {}
        if data.get("resultType") == "vector":
            return [(dict(s["metric"]), float(s["value"][1])) for s in data.get("result", [])]
        if data.get("resultType") == "scalar":
            return [({}, float(data["result"][1]))]
        raise QueryError(f"Prometheus: a {data.get('resultType')} is not an instant vector")

    return query


# ---------------------------------------------------------------------- observing
def observe(rule: Rule, facts: Facts) -> list[Observation]:
    q = rule.query
    if q.kind == "metric":
        if facts.metric is None:
            raise QueryError("no Prometheus is configured for metric rules")
        return [
            Observation(labels.get(q.subject_label) or _labels(labels) or rule.name, value)
            for labels, value in facts.metric(q.promql)
        ]
    if q.measure == "pool_free_cards":
        return [
            Observation(
                f"{pool}/{kind}",
                float(c.total - c.used),
                context={
                    "pool": pool,
                    "kind": kind,
                    "used": c.used,
                    "total": c.total,
                    "pending": c.pending,
                },
            )
            for (pool, kind), c in facts.pools.items()
            if kind == q.cards
        ]
    if q.measure == "balance_left":
        return _balances(rule, facts)
    return _card_hours(rule, facts)


def _balances(rule: Rule, facts: Facts) -> list[Observation]:
    """The money left of the account the rule names, or of every account (a domain's or a
    project's: billing names its tenant, not its kind)."""
    name, level = rule.scope.name, rule.scope.level
    subjects = {name: facts.balances[name]} if name in facts.balances else {}
    if not name:
        subjects = dict(facts.balances)
    return [
        Observation(
            tenant,
            float(left),
            level,
            tenant,
            {"tenant": tenant, "left": left, "threshold": Decimal(str(rule.threshold))},
        )
        for tenant, left in sorted(subjects.items())
    ]


def _labels(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k != "__name__")[:128]


def _card_hours(rule: Rule, facts: Facts) -> list[Observation]:
    level, name, q = rule.scope.level, rule.scope.name, rule.query
    if name:
        # a domain or a project is named by its Slurm account: look in both
        order = [level] + [x for x in (Level.DOMAIN, Level.PROJECT) if x != level]
        found = next((lv for lv in order if name in facts.card_hours.get(lv, {})), level)
        if level is Level.USER:
            found = level
        subjects = {name: (found, facts.card_hours.get(found, {}).get(name, Decimal(0)))}
    else:
        subjects = {k: (level, v) for k, v in facts.card_hours.get(level, {}).items()}
    out = []
    for key, (lv, used) in sorted(subjects.items()):
        ctx: dict[str, Any] = {
            "tenant": key,
            "user": key,
            "level": lv.value,
            "used": used,
            "month": facts.month,
            "threshold": Decimal(str(rule.threshold)),
        }
        value = float(used)
        if q.measure == "card_hours_share":
            budget = q.budgets.get(key, q.budget)
            if not budget:
                continue
            value = float(used) / budget
            ctx |= {"budget": Decimal(str(budget)), "share": used / Decimal(str(budget))}
        out.append(Observation(key, value, lv, key, ctx))
    return out


# ---------------------------------------------------------------------- episodes
Deliver = Callable[[Alert, Observation], bool]


def run_rules(
    engine: Engine,
    rules: Sequence[Rule],
    facts: Facts,
    deliver: Deliver,
    now: datetime,
    *,
    site: str = "AIPool",
) -> list[str]:
    """One cycle over ``rules``; what happened, one line each (for the log)."""
    lines: list[str] = []
    for rule in rules:
        try:
            observed = observe(rule, facts)
        except QueryError as exc:
            log.warning("alert rule %s skipped: %s", rule.name, exc)
            lines.append(f"skipped {rule.name}: {exc}")
            continue
        lines += _step(engine, rule, observed, deliver, now, site)
    return lines


def _step(  # noqa: PLR0917 (one cycle's parts, passed on)
    engine: Engine,
    rule: Rule,
    observed: Sequence[Observation],
    deliver: Deliver,
    now: datetime,
    site: str,
) -> list[str]:
    # subjects as the state table keeps them (a long metric label is cut to its column)
    observed = [replace(o, subject=o.subject[:128]) for o in observed]
    holding = {o.subject: o for o in observed if rule.holds(o.value)}
    seen = {o.subject: o for o in observed}
    with engine.connect() as conn:
        states = {s.subject: s for s in conn.execute(_states(rule.name)).all()}
    lines = []
    for subject, o in holding.items():
        st = states.get(subject)
        since = st.since if st is not None else now
        if st is None:
            _insert(engine, rule, o, now)
        if st is not None and st.state == "firing":
            _set(engine, rule, o, now)
            continue
        if now - since < timedelta(seconds=rule.for_s):
            continue
        alert = Alert(rule, subject, FIRE, o.value, since, now, site, o.context)
        if deliver(alert, o):
            _set(engine, rule, o, now, state="firing", fired_at=now)
            lines.append(f"fired {rule.name} {subject}")
        else:
            lines.append(f"not delivered {rule.name} {subject}")
    for subject, st in states.items():
        if subject in holding:
            continue
        if st.state == "firing":
            o = seen.get(subject) or Observation(
                subject, st.value, Level(st.scope_level), st.scope_name
            )
            alert = Alert(rule, subject, RECOVER, o.value, st.since, now, site, o.context)
            ok = deliver(alert, o)
            lines.append(f"recovered {rule.name} {subject}" + ("" if ok else " (not delivered)"))
        with engine.begin() as conn:
            conn.execute(
                delete(AlertState).where(
                    AlertState.rule == rule.name, AlertState.subject == subject
                )
            )
    return lines


def _states(rule: str) -> Any:
    return select(AlertState).where(AlertState.rule == rule)


def _insert(engine: Engine, rule: Rule, o: Observation, now: datetime) -> None:
    with engine.begin() as conn:
        conn.execute(
            insert(AlertState).values(
                rule=rule.name,
                subject=o.subject,
                scope_level=o.level.value,
                scope_name=o.name,
                state="pending",
                since=now,
                value=o.value,
                updated_at=now,
            )
        )


def _set(engine: Engine, rule: Rule, o: Observation, now: datetime, **values: Any) -> None:
    with engine.begin() as conn:
        conn.execute(
            update(AlertState)
            .where(AlertState.rule == rule.name, AlertState.subject == o.subject)
            .values(value=o.value, updated_at=now, **values)
        )
