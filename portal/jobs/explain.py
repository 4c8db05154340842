"""Slurm's job states and reasons, and the policy daemon's decisions, in the reader's words.

Slurm's identifiers (``PENDING``, ``AssocGrpGRES``) are never shown alone: each page shows the
words in the reader's language and Slurm's code small beside them, for those who search for it.
Pure: the caller passes the locale (the portal passes the request's).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from portal.jobs.reasons import BEGIN_TIME_BY, FAMILIES, REASONS, UNKNOWN
from slurm_plugins.client.models import JobState
from translations import N_, gettext

#: state -> (short label, what it means)
STATES: Mapping[JobState, tuple[str, str]] = {
    JobState.PENDING: (N_("Pending"), N_("It waits in the queue to start.")),
    JobState.RUNNING: (N_("Running"), N_("It runs on its nodes.")),
    JobState.SUSPENDED: (N_("Suspended"), N_("It is paused for now and resumes later.")),
    JobState.COMPLETING: (N_("Completing"), N_("It has ended; Slurm is cleaning up its nodes.")),
    JobState.CONFIGURING: (N_("Starting"), N_("Its nodes are being prepared for it.")),
    JobState.COMPLETED: (N_("Completed"), N_("It finished with exit code 0.")),
    JobState.CANCELLED: (N_("Cancelled"), N_("Its user or an administrator cancelled it.")),
    JobState.FAILED: (
        N_("Failed"),
        N_("It ended with a non-zero exit code or could not be launched."),
    ),
    JobState.TIMEOUT: (N_("Timed out"), N_("It was stopped when it reached its time limit.")),
    JobState.NODE_FAIL: (N_("Node failure"), N_("It ended because one of its nodes failed.")),
    JobState.PREEMPTED: (
        N_("Preempted"),
        N_("It was stopped to make room for work of a higher priority."),
    ),
    JobState.BOOT_FAIL: (N_("Boot failure"), N_("Its nodes failed to start.")),
    JobState.DEADLINE: (N_("Deadline passed"), N_("It ended because its deadline passed.")),
    JobState.OUT_OF_MEMORY: (
        N_("Out of memory"),
        N_("It was stopped because it used more memory than it asked for."),
    ),
    JobState.REQUEUED: (N_("Requeued"), N_("It was put back in the queue and starts again.")),
    JobState.RESIZING: (N_("Resizing"), N_("Slurm is changing the nodes it holds.")),
    JobState.REVOKED: (
        N_("Revoked"),
        N_("Another cluster of the federation runs it, so it was withdrawn here."),
    ),
    JobState.SPECIAL_EXIT: (
        N_("Held after exit"),
        N_("It ended with an exit code that holds it for an administrator."),
    ),
    JobState.UNKNOWN: (N_("Unknown"), N_("Slurm reports a state that is not known here.")),
}


@dataclass(frozen=True, slots=True)
class Explained:
    """A reason in words: what it means and what the job's user can do, with Slurm's code
    (shown small beside the words) and what Slurm added to it (nodes, a job id)."""

    code: str
    meaning: str
    advice: str
    detail: str = ""
    known: bool = True


def state_words(state: JobState, locale: str | None) -> tuple[str, str]:
    """``(label, meaning)`` of a job state in ``locale``."""
    label, meaning = STATES.get(state, STATES[JobState.UNKNOWN])
    return gettext(locale, label), gettext(locale, meaning)


def split_reason(text: str | None) -> tuple[str, str] | None:
    """Slurm's reason as ``(code, detail)``: ``ReqNodeNotAvail, UnavailableNodes:gpu1`` ->
    (``ReqNodeNotAvail``, ``UnavailableNodes:gpu1``); none for no reason (``None``, empty)."""
    text = (text or "").strip().removeprefix("(").removesuffix(")").strip()
    if not text or text == "None":
        return None
    if text in REASONS:
        return text, ""
    m = re.match(r"([A-Za-z_]+)[\s,:]*(.*)", text, re.DOTALL)
    if m is None:
        return text, ""
    return m.group(1), m.group(2).strip()


def entry(code: str) -> tuple[str, str] | None:
    """The ``(meaning, advice)`` msgids of a code: its own, else its family's; ``None`` for a
    code nothing here explains."""
    if code in REASONS:
        return REASONS[code]
    for prefix, said in FAMILIES:
        if code.startswith(prefix) and len(code) > len(prefix):
            return said
    return None


def explain_reason(
    text: str | None, locale: str | None, *, begin_by: str | None = None
) -> Explained | None:
    """Slurm's reason in ``locale``; ``None`` when there is none. ``begin_by`` says who set
    the begin time behind a ``BeginTime`` (a key of :data:`BEGIN_TIME_BY`) when the job's
    user did not: the placement daemon's deferral or a requeue, not "the start time it asked
    for"."""
    parts = split_reason(text)
    if parts is None:
        return None
    code, detail = parts
    said = entry(code)
    if code == "BeginTime":
        said = BEGIN_TIME_BY.get(begin_by or "", said)
    known = said is not None
    meaning, advice = said or UNKNOWN
    return Explained(code, gettext(locale, meaning), gettext(locale, advice), detail, known)


# ------------------------------------------------------------------ the policy daemon's reasons
#: the resource a capacity count is of
_RES = r"(?P<resource>gpu|npu|cpu|mem)"
#: what the policy daemon's decisions say (slurm_plugins.policy.policies), as patterns over
#: its English text -> the sentence to show; the values are kept.
POLICY: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"gang (?P<name>\S+): only (?P<running>\d+) of (?P<size>\d+) started; .*"),
        N_(
            "Gang group %(name)s: only %(running)s of its %(size)s members started, so the "
            "group is restarted together."
        ),
    ),
    (
        re.compile(r"gang (?P<name>\S+): (?P<queued>\d+) of (?P<size>\d+) members queued"),
        N_("Gang group %(name)s: held until all %(size)s members are queued (%(queued)s so far)."),
    ),
    (
        re.compile(
            r"gang (?P<name>\S+): member (?P<member>\d+) is not eligible yet \((?P<why>.*)\)"
        ),
        N_("Gang group %(name)s: held because member job %(member)s cannot start yet: %(why)s"),
    ),
    (
        re.compile(r"gang (?P<name>\S+): the (?P<size>\d+) members cannot all start now"),
        N_(
            "Gang group %(name)s: held until all %(size)s members can start at once; they "
            "start together."
        ),
    ),
    (
        re.compile(r"gang (?P<name>\S+): all (?P<size>\d+) members running"),
        N_("Gang group %(name)s: all %(size)s members are running."),
    ),
    (
        re.compile(
            r"gang (?P<name>\S+): (?P<running>\d+) of (?P<size>\d+) running, the rest released"
        ),
        N_("Gang group %(name)s: %(running)s of its %(size)s members run; the rest were released."),
    ),
    (
        re.compile(r"gang (?P<name>\S+): all (?P<size>\d+) members fit, released together"),
        N_("Gang group %(name)s: all %(size)s members fit and were released together."),
    ),
    (
        re.compile(r"anti-affinity (?P<group>\S+): waiting for member (?P<member>\d+) .*"),
        N_("Anti-affinity group %(group)s: held until job %(member)s has started."),
    ),
    (
        re.compile(r"anti-affinity (?P<group>\S+): kept off (?P<nodes>\S+).*"),
        N_("Anti-affinity group %(group)s: kept off %(nodes)s, where other members run."),
    ),
    (
        re.compile(
            r"capacity: tenant (?P<tenant>\S+) within its guarantee \((?P<shown>[^)]*)\); "
            r"reclaiming"
        ),
        N_(
            "Capacity guarantee: tenant %(tenant)s is within its guarantee (%(shown)s); work "
            "borrowed by others is being reclaimed for it."
        ),
    ),
    (
        re.compile(r"capacity: tenant (?P<tenant>\S+) within its guarantee \((?P<shown>[^)]*)\)"),
        N_("Capacity guarantee: tenant %(tenant)s is within its guarantee (%(shown)s)."),
    ),
    (
        re.compile(
            rf"capacity: cohort (?P<name>\S+) has (?P<free>[0-9.]+) {_RES} of quota left, "
            r"job needs (?P<need>[0-9.]+)"
        ),
        N_(
            "Capacity guarantee: the tenants of cohort %(name)s have %(free)s of their quota "
            "left; the job needs %(need)s."
        ),
    ),
    (
        re.compile(
            rf"capacity: tenant (?P<name>\S+) has (?P<free>[0-9.]+) {_RES} of quota left, "
            r"job needs (?P<need>[0-9.]+)"
        ),
        N_(
            "Capacity guarantee: tenant %(name)s has %(free)s of its quota left; the job needs "
            "%(need)s."
        ),
    ),
    (
        re.compile(
            r"capacity: tenant (?P<tenant>\S+) at its borrowing limit: (?P<used>[0-9.]+)"
            rf"\+(?P<need>[0-9.]+) {_RES} > (?P<nominal>[0-9.]+) guaranteed \+ "
            r"(?P<limit>[0-9.]+) borrowable"
        ),
        N_(
            "Capacity guarantee: tenant %(tenant)s is at its borrowing limit: %(used)s in use "
            "and %(need)s more asked for, beyond %(nominal)s guaranteed and %(limit)s it may "
            "borrow."
        ),
    ),
    (
        re.compile(
            r"capacity: tenant (?P<tenant>\S+) over guarantee by (?P<shown>.+), borrowing in "
            r"QOS (?P<qos>\S+)"
        ),
        N_(
            "Capacity guarantee: tenant %(tenant)s is over its guarantee by %(shown)s; the job "
            "borrows from other tenants, in QOS %(qos)s (it may be requeued when they need it)."
        ),
    ),
    (
        re.compile(r"capacity: tenant (?P<tenant>\S+) over guarantee by (?P<shown>.+), borrowing"),
        N_(
            "Capacity guarantee: tenant %(tenant)s is over its guarantee by %(shown)s; the job "
            "borrows from other tenants."
        ),
    ),
    (
        re.compile(
            r"capacity: reclaimed for tenant (?P<tenant>\S+)'s guarantee \(job (?P<job>\d+)\); "
            r"tenant (?P<other>\S+) was borrowing"
        ),
        N_(
            "Capacity guarantee: requeued so that tenant %(tenant)s gets its guarantee (job "
            "%(job)s); tenant %(other)s was borrowing."
        ),
    ),
    (
        re.compile(r"capacity: (?P<why>.*)"),
        N_("Capacity guarantee: %(why)s"),
    ),
    (
        re.compile(
            r"placement: waits for one card with room for its share "
            r"\(Slurm would split it over several cards\)"
        ),
        N_(
            "Placement: it waits for one card with room for its share (Slurm, placing it "
            "itself, would split it over several cards)."
        ),
    ),
    (
        re.compile(r"placement: not on (?P<nodes>\S+) \(a card there still has shards\)"),
        N_(
            "Placement: kept off %(nodes)s, where a card still holds shards of other jobs "
            "(Slurm could give that card whole to this job)."
        ),
    ),
    (
        re.compile(r"placement: (?P<node>\S+) \((?P<why>.*)\)"),
        N_("Placement: it is to run on node %(node)s (%(why)s)."),
    ),
    (
        re.compile(r"reschedule: moved to (?P<node>\S+) to defragment"),
        N_("Rescheduling: moved to node %(node)s to reduce fragmentation."),
    ),
    (
        re.compile(r"score (?P<score>[0-9.]+) \((?P<why>.*)\) -> SiteFactor (?P<factor>\d+)"),
        N_("Queue order: score %(score)s (%(why)s), given to Slurm as priority factor %(factor)s."),
    ),
    (
        re.compile(r"(?P<policy>fifo|fair|priority) (?P<score>[0-9.]+) \((?P<why>.*)\)"),
        N_("Queue order (%(policy)s): score %(score)s, %(why)s."),
    ),
)
POLICY_OTHER = N_("Scheduling policy: %(text)s")
#: the capacity policy's amounts ("1.25 of 4 gpu, 2 of 16 cpu"): one resource each
_AMOUNT = re.compile(r"(?P<used>[0-9.]+) of (?P<quota>[0-9.]+) (?P<resource>gpu|npu|cpu|mem)")
#: the capacity policy's quantities ("2 gpu", "0.5 npu"): one resource
_QUANTITY = re.compile(r"(?P<n>[0-9.]+) (?P<resource>gpu|npu|cpu|mem)")
_UNIT = {
    "gpu": (N_("%(amount)s GPU card"), N_("%(amount)s GPU cards")),
    "npu": (N_("%(amount)s NPU card"), N_("%(amount)s NPU cards")),
    "cpu": (N_("%(amount)s CPU"), N_("%(amount)s CPUs")),
    "mem": (N_("%(amount)s GB of memory"), N_("%(amount)s GB of memory")),
}


def _count(amount: str, resource: str, locale: str | None) -> str:
    """``2`` of ``gpu`` in words: "2 GPU cards" ("2 张 GPU 卡")."""
    singular, plural = _UNIT[resource]
    return gettext(locale, singular if float(amount) == 1 else plural, amount=amount)


_RESOURCE = {
    "gpu": N_("%(used)s of %(quota)s GPU cards"),
    "npu": N_("%(used)s of %(quota)s NPU cards"),
    "cpu": N_("%(used)s of %(quota)s CPUs"),
    "mem": N_("%(used)s of %(quota)s GB of memory"),
}


#: the queue-order policies' parts of a score ("priority 0.500 x2"): name, value, weight
_PART = re.compile(r"(?P<name>fifo|fair|priority|capacity) (?P<value>[0-9.]+) x(?P<weight>[0-9.]+)")
_SCORER = {
    "fifo": N_("arrival order %(value)s x%(weight)s"),
    "fair": N_("fair share %(value)s x%(weight)s"),
    "priority": N_("priority %(value)s x%(weight)s"),
    "capacity": N_("capacity guarantee %(value)s x%(weight)s"),
}
#: the queue-order policies by name, as "Queue order (%(policy)s)" shows them
_POLICY_NAME = {
    "fifo": N_("arrival order"),
    "fair": N_("fair share"),
    "priority": N_("priority"),
}
#: why each queue-order policy scored a job so (their ``explain``), as patterns -> sentences
_WHY: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"submitted (?P<at>\S+ \S+) UTC"), N_("submitted %(at)s UTC")),
    (
        re.compile(
            r"tenant (?P<tenant>\S+) used (?P<use>\d+%) of recent use for a (?P<share>\d+%) share"
        ),
        N_("tenant %(tenant)s used %(use)s of recent use for a %(share)s share"),
    ),
    (
        re.compile(r"class (?P<cls>\S+) (?P<base>[0-9.]+) \+ aging (?P<aged>[0-9.]+)"),
        N_("class %(cls)s %(base)s + aging %(aged)s"),
    ),
    (re.compile(r"class (?P<cls>\S+) (?P<base>[0-9.]+)"), N_("class %(cls)s %(base)s")),
    # the placement scorer's choice (gres.placement)
    (
        re.compile(
            r"(?P<scorer>\S+): score (?P<score>\S+), best of (?P<n>\d+) fitting nodes "
            r"\((?P<tied>\d+) tied\)"
        ),
        N_(
            "scorer %(scorer)s: score %(score)s, the best of %(n)s nodes where it fits (%(tied)s "
            "tied)"
        ),
    ),
    (
        re.compile(r"(?P<scorer>\S+): score (?P<score>\S+), best of (?P<n>\d+) fitting nodes"),
        N_("scorer %(scorer)s: score %(score)s, the best of %(n)s nodes where it fits"),
    ),
    (re.compile(r"kept"), N_("kept where it was placed")),
)


def _why(text: str, locale: str | None) -> str:
    """Why a queue-order policy scored a job so, in ``locale``; text that is not one is kept."""
    for pattern, msgid in _WHY:
        if m := pattern.fullmatch(text.strip()):
            return gettext(locale, msgid, **m.groupdict())
    return text


def _each(
    text: str, pattern: re.Pattern[str], say: Callable[[re.Match[str]], str], locale: str | None
) -> str:
    """A comma-separated list whose every item ``pattern`` matches, each item said by ``say``
    and joined in ``locale``; text that is not such a list is kept."""
    items = [pattern.fullmatch(p.strip()) for p in text.split(",")]
    if not all(items):
        return text
    return gettext(locale, N_(", ")).join(say(m) for m in items if m is not None)


def _parts(text: str, locale: str | None) -> str:
    """A score's parts in ``locale`` (policy names translated); text that is not one is kept."""
    return _each(
        text,
        _PART,
        lambda m: gettext(locale, _SCORER[m["name"]], value=m["value"], weight=m["weight"]),
        locale,
    )


def _quantities(text: str, locale: str | None) -> str:
    """``2 gpu, 1 npu`` in ``locale``; text that is not that is kept."""
    return _each(text, _QUANTITY, lambda m: _count(m["n"], m["resource"], locale), locale)


def _amounts(text: str, locale: str | None) -> str:
    """The capacity policy's amounts in ``locale``; text that is not one is kept."""
    return _each(
        text,
        _AMOUNT,
        lambda m: gettext(locale, _RESOURCE[m["resource"]], used=m["used"], quota=m["quota"]),
        locale,
    )


def policy_words(text: str, locale: str | None) -> str:
    """One decision of the policy daemon in ``locale`` (its own values kept)."""
    for pattern, msgid in POLICY:
        m = pattern.fullmatch(text.strip())
        if m:
            values = m.groupdict()
            if "shown" in values:
                values["shown"] = _amounts(values["shown"], locale)
                values["shown"] = _quantities(values["shown"], locale)
            if resource := values.pop("resource", None):  # the capacity policy's counts
                for key in ("free", "need", "used", "nominal", "limit"):
                    if key in values:
                        values[key] = _count(values[key], resource, locale)
            if "policy" in values:
                values["policy"] = gettext(locale, _POLICY_NAME[values["policy"]])
            if "score" in values and "factor" in values:
                values["why"] = _parts(values["why"], locale)
            elif "why" in values:  # a Slurm reason, or a policy's own why
                said = explain_reason(values["why"], locale)
                values["why"] = said.meaning if said and said.known else _why(values["why"], locale)
            return gettext(locale, msgid, **values)
    return gettext(locale, POLICY_OTHER, text=text)
