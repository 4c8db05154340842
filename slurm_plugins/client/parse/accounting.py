"""Accounting records (sacct), associations and QOS (sacctmgr) from JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from slurm_plugins.client.errors import ParseError
from slurm_plugins.client.models import (
    AcctJob,
    AcctStep,
    Association,
    JobState,
    Qos,
)
from slurm_plugins.client.parse.shapes import (
    Doc,
    TresItem,
    checked,
    exit_code,
    job_state,
    limit_minutes,
    load,
    num,
    num0,
    states,
    text,
    tres_list,
    when,
    word_list,
)


# ---------------------------------------------------------------------- accounting
# sacct prints some forty fields per job and more per step; the typed decoder reads only the
# ones below and skips the rest without building them. Values whose shape differs between
# Slurm versions stay ``Any`` and go through the shape helpers. None of these objects can be
# part of a reference cycle, so the garbage collector need not track them (``gc=False``):
# a million-job import would otherwise spend a third of its time in collections.
class _Tres(msgspec.Struct, gc=False):
    allocated: list[TresItem] | None = None
    requested: list[TresItem] | None = None


class _Time(msgspec.Struct, gc=False):
    elapsed: Any = None
    submission: Any = None
    start: Any = None
    end: Any = None
    limit: Any = None


class _State(msgspec.Struct, gc=False):
    current: Any = None


class _Array(msgspec.Struct, gc=False):
    job_id: Any = None
    task_id: Any = None


class _Het(msgspec.Struct, gc=False):
    job_id: Any = None
    job_offset: Any = None


class _Job(msgspec.Struct, gc=False):
    job_id: Any = None
    cluster: Any = None
    name: Any = None
    user: Any = None
    account: Any = None
    partition: Any = None
    qos: Any = None
    state: _State | None = None
    time: _Time | None = None
    tres: _Tres | None = None
    nodes: Any = None
    exit_code: Any = None
    array: _Array | None = None
    het: _Het | None = None
    comment: Any = None
    working_directory: Any = None
    # 23.02+: the pattern as asked (``%x-%j.out``); 24.05+ also the file it became
    stdout: Any = None
    stdout_expanded: Any = None
    steps: list[Any] | None = None


class _Jobs(msgspec.Struct, gc=False):
    errors: list[Any] | None = None
    jobs: list[_Job] | None = None


_DECODE_JOBS = msgspec.json.Decoder(_Jobs).decode
_NO_TIME = _Time()
_NO_TRES = _Tres()
_NO_ARRAY = _Array()
_NO_HET = _Het()


def acct_jobs(text_: str | bytes | Doc) -> list[AcctJob]:
    try:
        doc = msgspec.convert(text_, _Jobs) if isinstance(text_, Mapping) else _DECODE_JOBS(text_)
    except msgspec.ValidationError as exc:
        raise ParseError(f"accounting records not understood: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise ParseError(f"not JSON: {exc}") from exc
    return [_acct_job(j) for j in checked(doc.errors, doc.jobs, "jobs", ("errors", "meta"))]


def acct_job(j: Doc) -> AcctJob:
    try:
        typed = msgspec.convert(j, _Job)
    except msgspec.ValidationError as exc:
        raise ParseError(f"accounting record not understood: {exc}") from exc
    return _acct_job(typed)


def _acct_job(j: _Job) -> AcctJob:
    try:
        t = j.time or _NO_TIME
        tres = j.tres or _NO_TRES
        array = j.array or _NO_ARRAY
        het = j.het or _NO_HET
        return AcctJob(
            job_id=int(j.job_id),
            cluster=text(j.cluster),
            name=text(j.name),
            user=text(j.user),
            account=text(j.account),
            partition=text(j.partition),
            qos=text(j.qos),
            state=JobState.parse(job_state(j.state.current if j.state else None)),
            submit_time=when(t.submission),
            start_time=when(t.start),
            end_time=when(t.end),
            elapsed_s=num0(t.elapsed),
            tres_alloc=tres_list(tres.allocated),
            tres_req=tres_list(tres.requested),
            nodes=text(j.nodes),
            exit_code=exit_code(j.exit_code),
            array_job_id=num(array.job_id) or None,
            array_task_id=_array_task(array.task_id),
            het_job_id=num(het.job_id) or None,
            het_job_offset=_het_offset(het),
            comment=_comment(j.comment),
            time_limit_min=limit_minutes(t.limit),
            work_dir=text(j.working_directory),
            stdout_path=text(j.stdout_expanded) or text(j.stdout),
            steps=tuple(acct_step(s) for s in j.steps or ()),
        )
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise ParseError(f"accounting record not understood: {exc!r}") from exc


def acct_step(s: Doc) -> AcctStep:
    step = s.get("step") or {}
    sid = step.get("id")
    if isinstance(sid, Mapping):  # 23.02+: {"job_id": 5, "step_id": "batch"}
        sid = sid.get("step_id")
    st = states(s.get("state"))
    t = s.get("time") or {}
    sid = text(sid if sid is not None else step.get("step_id"))
    return AcctStep(
        step_id=sid.split(".", 1)[1] if "." in sid else sid,  # 24.11 says "5.batch"
        name=text(step.get("name")),
        state=JobState.parse(st[0] if st else ""),
        elapsed_s=num0(t.get("elapsed")),
        tres_alloc=tres_list((s.get("tres") or {}).get("allocated")),
    )


def _array_task(value: Any) -> int | None:
    n = num(value)
    return None if n is None or n >= 0xFFFFFFFE else n


def _het_offset(het: _Het) -> int | None:
    if not num(het.job_id):
        return None
    n = num(het.job_offset)
    return None if n is None or n >= 0xFFFFFFFE else n


def _comment(value: Any) -> str:
    if isinstance(value, Mapping):  # sacct: {"administrator": …, "job": …, "system": …}
        return text(value.get("job"))
    return text(value)


# ---------------------------------------------------------------------- associations / QOS
def associations(text_: str | bytes | Doc) -> list[Association]:
    return [association(a) for a in load(text_, "associations")]


def association(a: Doc) -> Association:
    maxes = a.get("max") or {}
    tres = maxes.get("tres") or {}
    per = tres.get("per") or {}
    parent = a.get("parent_account")
    default = a.get("default") or {}
    return Association(
        cluster=text(a.get("cluster")),
        account=text(a.get("account")),
        user=text(a.get("user")),
        parent=text(parent),
        partition=text(a.get("partition")),
        qos=word_list(a.get("qos")),
        default_qos=text(default.get("qos")),
        grp_tres=tres_list(tres.get("total") or (tres.get("group") or {}).get("active")),
        grp_tres_mins=tres_list((tres.get("group") or {}).get("minutes")),
        max_tres_per_job=tres_list(per.get("job")),
        shares=num(a.get("shares_raw")),
    )


def qos(text_: str | bytes | Doc) -> list[Qos]:
    return [qos_one(q) for q in load(text_, "qos")]


def qos_one(q: Doc) -> Qos:
    limits = q.get("limits") or {}
    maxes = limits.get("max") or {}
    tres = maxes.get("tres") or {}
    per = tres.get("per") or {}
    preempt = q.get("preempt") or {}
    return Qos(
        name=str(q["name"]),
        priority=num0(q.get("priority")),
        preempt=word_list(preempt.get("list")),
        preempt_mode=tuple(states(preempt.get("mode"))),
        grp_tres=tres_list(tres.get("total")),
        max_tres_per_job=tres_list(per.get("job")),
        max_tres_per_user=tres_list(per.get("user")),
        flags=tuple(states(q.get("flags"))),
        description=text(q.get("description")),
    )
