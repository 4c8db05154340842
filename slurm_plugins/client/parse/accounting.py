"""Accounting records (sacct), associations and QOS (sacctmgr) from JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
    exit_code,
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
def acct_jobs(text_: str | bytes | Doc) -> list[AcctJob]:
    return [acct_job(j) for j in load(text_, "jobs")]


def acct_job(j: Doc) -> AcctJob:
    try:
        t = j.get("time") or {}
        tres = j.get("tres") or {}
        array = j.get("array") or {}
        het = j.get("het") or {}
        st = states((j.get("state") or {}).get("current"))
        return AcctJob(
            job_id=int(j["job_id"]),
            cluster=text(j.get("cluster")),
            name=text(j.get("name")),
            user=text(j.get("user")),
            account=text(j.get("account")),
            partition=text(j.get("partition")),
            qos=text(j.get("qos")),
            state=JobState.parse(st[0] if st else ""),
            submit_time=when(t.get("submission")),
            start_time=when(t.get("start")),
            end_time=when(t.get("end")),
            elapsed_s=num0(t.get("elapsed")),
            tres_alloc=tres_list(tres.get("allocated")),
            tres_req=tres_list(tres.get("requested")),
            nodes=text(j.get("nodes")),
            exit_code=exit_code(j.get("exit_code")),
            array_job_id=num(array.get("job_id")) or None,
            array_task_id=_array_task(array.get("task_id")),
            het_job_id=num(het.get("job_id")) or None,
            het_job_offset=_het_offset(het),
            comment=_comment(j.get("comment")),
            steps=tuple(acct_step(s) for s in j.get("steps") or []),
        )
    except (KeyError, TypeError, ValueError) as exc:
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


def _het_offset(het: Mapping[str, Any]) -> int | None:
    if not num(het.get("job_id")):
        return None
    n = num(het.get("job_offset"))
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
