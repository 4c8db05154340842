"""What the pages show of a job, in the reader's language: its state and Slurm's reason in
words (:mod:`portal.jobs.explain`), the policy daemon's reasons, the cards, CPUs and memory
it asks for and holds, and how long it has run. Registered as template globals, so the
queue's table shows the same words on every page that includes it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from pathlib import Path

from flask import Flask, current_app

from portal.i18n import current, gettext, lazy_gettext, ngettext, number
from portal.jobs import explain
from slurm_plugins.client import labels
from slurm_plugins.client.capacity import Held, held
from slurm_plugins.client.models import Job, JobState, Tres


@dataclass(frozen=True, slots=True)
class StateWords:
    code: str  # Slurm's own (PENDING), shown small
    label: str
    meaning: str
    css: str  # a class per state, for its colour


def state(job: Job) -> StateWords:
    label, meaning = explain.state_words(job.state, current())
    return StateWords(job.state.value, label, meaning, f"state-{job.state.value}")


def reason(job: Job) -> explain.Explained | None:
    """Slurm's reason in words, where it says one (a running job's ``None`` is none)."""
    if job.state is JobState.RUNNING and job.reason in ("", "None"):
        return None
    return explain.explain_reason(job.reason, current(), begin_by=begin_set_by(job))


def begin_set_by(job: Job) -> str | None:
    """Who gave a queued job its begin time when its user did not: the admission hook, for
    the placement daemon (its ``placement=deferred`` label), or Slurm, requeueing it."""
    if job.state is not JobState.PENDING:
        return None
    if job.restart_count:
        return "requeue"
    return "placement" if labels.tagged_deferred(job.admin_comment) else None


def policy_reasons(job: Job) -> list[str]:
    """The policy daemon's latest decisions about a queued or running job, in words
    (``POLICY_STATE_DIR``: the daemon's state directory, readable by the portal; none when
    unset). The log is parsed once per change of its file, not once per page."""
    directory = current_app.config.get("POLICY_STATE_DIR")
    if not directory or not job.state.is_active:
        return []
    from slurm_plugins.policy import decision_log, decisions

    path = decision_log(Path(directory))
    try:
        st = path.stat()
    except OSError:
        return []
    cache = current_app.extensions.setdefault("aipool.policy_reasons", {})
    key = (str(path), st.st_mtime_ns, st.st_size)
    if cache.get("key") != key:
        cache["key"], cache["log"] = key, decisions(Path(directory))
    said: list[str] = cache["log"].get(job.job_id, [])
    return [explain.policy_words(r, current()) for r in said]


#: The accelerator families beside NVIDIA and Ascend, as the portal names them.
CARD_WORDS = {
    "mlu": lazy_gettext("Cambricon MLU"),
    "dcu": lazy_gettext("Hygon DCU"),
    "xpu": lazy_gettext("Kunlunxin XPU"),
}


def cards_text(cards: Fraction) -> str:
    """A number of cards: ``2``, ``1/4`` (a part of one card), ``1.25``."""
    if cards.denominator == 1:
        return number(int(cards))
    if cards < 1:
        return f"{cards.numerator}/{cards.denominator}"
    return number(float(cards), 2)


def _device(h: Held) -> str:
    cards = cards_text(h.cards)
    if h.kind == "shard":
        return ngettext(
            "%(num)d GPU shard (%(cards)s of a card)",
            "%(num)d GPU shards (%(cards)s of a card)",
            h.count,
            cards=cards,
        )
    if h.kind == "vnpu":
        return ngettext(
            "%(num)d vNPU %(type)s (%(cards)s of an NPU)",
            "%(num)d vNPUs %(type)s (%(cards)s of an NPU)",
            h.count,
            type=h.type,
            cards=cards,
        )
    if h.kind == "npu":
        if h.type:
            return ngettext("%(num)d NPU %(type)s", "%(num)d NPUs %(type)s", h.count, type=h.type)
        return ngettext("%(num)d NPU", "%(num)d NPUs", h.count)
    if h.kind in CARD_WORDS:
        card = str(CARD_WORDS[h.kind])
        if h.type:
            return ngettext(
                "%(num)d %(card)s card %(type)s",
                "%(num)d %(card)s cards %(type)s",
                h.count,
                card=card,
                type=h.type,
            )
        return ngettext("%(num)d %(card)s card", "%(num)d %(card)s cards", h.count, card=card)
    if h.type:
        return ngettext(
            "%(num)d whole GPU %(type)s", "%(num)d whole GPUs %(type)s", h.count, type=h.type
        )
    return ngettext("%(num)d whole GPU", "%(num)d whole GPUs", h.count)


def memory_text(mib: int) -> str:
    if mib >= 1024:
        return gettext("%(amount)s GiB", amount=number(mib / 1024, 1 if mib % 1024 else 0))
    return gettext("%(amount)s MiB", amount=number(mib))


def resources(tres: Tres, per_card: int = 32) -> list[str]:
    """Cards (shards and vNPUs as their share of a card), nodes, CPUs and memory in words."""
    out = [_device(h) for h in held(tres, per_card)]
    if tres["node"]:
        out.append(ngettext("%(num)d node", "%(num)d nodes", tres["node"]))
    if tres["cpu"]:
        out.append(ngettext("%(num)d CPU", "%(num)d CPUs", tres["cpu"]))
    if tres["mem"]:
        out.append(gettext("%(amount)s memory", amount=memory_text(tres["mem"])))
    return out


def duration(seconds: float | None) -> str:
    """``2 h 05 min``, ``4 min 07 s``; ``—`` for none."""
    if seconds is None or seconds < 0:
        return "—"
    s = int(seconds)
    days, rest = divmod(s, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        if hours:
            return gettext("%(d)d d %(h)d h", d=days, h=hours)
        return ngettext("%(num)d day", "%(num)d days", days)
    if hours:
        if minutes:
            return gettext("%(h)d h %(m)02d min", h=hours, m=minutes)
        return gettext("%(h)d h", h=hours)
    if minutes:
        if secs:
            return gettext("%(m)d min %(s)02d s", m=minutes, s=secs)
        return gettext("%(m)d min", m=minutes)
    return gettext("%(s)d s", s=secs)


@dataclass(frozen=True, slots=True)
class Times:
    """A job's true times: a running job has no end (Slurm's end for it is start + its time
    limit, shown as the latest it may run); a pending one has at most an expected start."""

    submitted: datetime | None
    started: datetime | None
    expected_start: datetime | None
    ended: datetime | None
    ends_by: datetime | None
    run_s: float | None


def times(job: Job, now: datetime) -> Times:
    pending = job.state is JobState.PENDING
    finished = job.state.is_finished
    started = None if pending else job.start_time
    ended = job.end_time if finished else None
    run_s = None
    if started is not None:
        run_s = ((ended or now) - started).total_seconds()
    return Times(
        submitted=job.submit_time,
        started=started,
        expected_start=job.start_time if pending and job.start_time else None,
        ended=ended,
        ends_by=job.end_time if not finished and not pending and job.end_time else None,
        run_s=run_s,
    )


def per_card_of(nodes: Sequence[object]) -> int:
    """Shards per card the jobs' shards are counted against (the first GPU node's)."""
    from slurm_plugins.client.capacity import shards_per_card
    from slurm_plugins.client.models import Node

    gpu = next((n for n in nodes if isinstance(n, Node) and n.gres_total("gpu")), None)
    return shards_per_card(gpu)


def install(app: Flask) -> None:
    app.add_template_global(state, "job_state")
    app.add_template_global(reason, "job_reason")
    app.add_template_global(resources, "job_resources")
    app.add_template_global(duration, "duration")
    app.add_template_global(cards_text, "cards_text")
