"""Turn Slurm's ``--json`` output into the typed models, whatever the Slurm version.

Slurm 22.05 (openapi v0.0.38 data parser) prints plain numbers, ``"job_state": "PENDING"`` and
``"state": "idle"`` with separate ``state_flags``. Slurm 23.02+ (v0.0.39 … v0.0.42, 24.11 in
Debian 13) wraps numbers as ``{"set": true, "infinite": false, "number": 5}``, states as
lists of flags, and moves some fields (``exit_code``, ``time``, ``tres``) into objects. Each
helper below accepts both shapes, so callers never see the difference.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from slurm_plugins.client.errors import ParseError
from slurm_plugins.client.models import (
    AcctJob,
    AcctStep,
    Association,
    Gres,
    Job,
    JobState,
    Node,
    NodeState,
    Partition,
    Qos,
    Tres,
)

Doc = Mapping[str, Any]


# ---------------------------------------------------------------------- shapes
def load(text: str | bytes | Doc, key: str) -> list[Doc]:
    """Parse a document and return its ``key`` list; Slurm errors in it become ParseError."""
    if isinstance(text, Mapping):
        doc: Any = text
    else:
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise ParseError(f"not JSON: {exc}") from exc
    if not isinstance(doc, Mapping):
        raise ParseError("expected a JSON object at the top level")
    errors = [e for e in doc.get("errors") or [] if isinstance(e, Mapping)]
    if errors and key not in doc:
        msg = "; ".join(str(e.get("description") or e.get("error") or e) for e in errors)
        raise ParseError(f"Slurm reported errors: {msg}")
    items = doc.get(key)
    if items is None:
        raise ParseError(f"no {key!r} in Slurm's output (keys: {sorted(doc)})")
    if not isinstance(items, list):
        raise ParseError(f"{key!r} is not a list")
    return items


def num(value: Any) -> int | None:
    """``5``, ``"5"`` or ``{"set": true, "infinite": false, "number": 5}`` -> 5; unset -> None."""
    if isinstance(value, Mapping):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def num0(value: Any) -> int:
    return num(value) or 0


def when(value: Any) -> datetime | None:
    """Epoch seconds (either shape) -> aware UTC datetime; 0 / unset -> None."""
    seconds = num(value)
    if not seconds or seconds <= 0:
        return None
    return datetime.fromtimestamp(seconds, tz=UTC)


def states(value: Any) -> list[str]:
    """``"PENDING"`` or ``["PENDING", "REQUEUED"]`` -> upper-case list."""
    if isinstance(value, str):
        return [value.upper()] if value else []
    if isinstance(value, list):
        return [str(v).upper() for v in value]
    return []


def text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def word_list(value: Any) -> tuple[str, ...]:
    """Comma-separated string or list -> tuple of non-empty words."""
    if isinstance(value, list):
        return tuple(str(v) for v in value if v)
    return tuple(w for w in text(value).split(",") if w)


def tres_list(items: Any) -> Tres:
    """sacct's ``[{"type": "gres", "name": "gpu:a100", "count": 2}, …]`` -> Tres."""
    counts: dict[str, int] = {}
    for item in items or []:
        kind, name = item.get("type", ""), item.get("name") or ""
        key = f"{kind}/{name}" if name else kind
        if kind == "mem":
            key = "mem"
        counts[key] = num0(item.get("count"))
    return Tres(counts)


def exit_code(value: Any) -> int | None:
    """The process's exit code, shell-style (128 + signal when killed by one).

    squeue 22.05 prints the raw wait status (``768`` for ``exit 3``, ``15`` for SIGTERM);
    sacct and 23.02+ print ``{"status": …, "return_code": …}`` with the code itself.
    """
    if isinstance(value, Mapping):
        return num(value.get("return_code"))
    if isinstance(value, str) and ":" in value:
        return num(value.split(":", 1)[0])
    status = num(value)
    if status is None:
        return None
    signal = status & 0x7F
    return 128 + signal if signal else (status >> 8) & 0xFF


# ---------------------------------------------------------------------- jobs
def jobs(text_: str | bytes | Doc) -> list[Job]:
    return [job(j) for j in load(text_, "jobs")]


def job(j: Doc) -> Job:
    try:
        st = states(j.get("job_state"))
        return Job(
            job_id=int(j["job_id"]),
            name=text(j.get("name")),
            user=text(j.get("user_name")),
            account=text(j.get("account")),
            partition=text(j.get("partition")),
            qos=text(j.get("qos")),
            state=JobState.parse(st[0] if st else ""),
            reason=text(j.get("state_reason")),
            priority=num0(j.get("priority")),
            site_factor=None,
            nice=num0(j.get("nice")),
            submit_time=when(j.get("submit_time")),
            start_time=when(j.get("start_time")),
            end_time=when(j.get("end_time")),
            time_limit_min=_time_limit(j.get("time_limit")),
            nodes=text(j.get("nodes")),
            node_count=num0(j.get("node_count")),
            cpus=num0(j.get("cpus")),
            gres_request=gres_request(j.get("tres_per_node")),
            tres_req=Tres.parse(text(j.get("tres_req_str"))),
            tres_alloc=Tres.parse(text(j.get("tres_alloc_str"))),
            gres_detail=tuple(str(g) for g in j.get("gres_detail") or []),
            comment=text(j.get("comment")),
            admin_comment=text(j.get("admin_comment")),
            array_job_id=num(j.get("array_job_id")) or None,
            array_task_id=num(j.get("array_task_id")),
            het_job_id=num(j.get("het_job_id")) or None,
            het_job_offset=num(j.get("het_job_offset")) if num(j.get("het_job_id")) else None,
            dependency=text(j.get("dependency")),
            required_nodes=text(j.get("required_nodes")),
            excluded_nodes=text(j.get("excluded_nodes")),
            features=text(j.get("features")),
            exit_code=exit_code(j.get("exit_code")),
            restart_count=num0(j.get("restart_cnt")),
            cluster=text(j.get("cluster")),
            work_dir=text(j.get("current_working_directory")),
            stdout_path=text(j.get("standard_output")),
            held=num(j.get("priority")) == 0 and "PENDING" in st,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError(f"job record not understood: {exc!r}") from exc


def gres_request(value: Any) -> str:
    """``gres:gpu:a100:1`` (22.05) or ``gres/gpu:a100:1`` (24.11) -> ``gpu:a100:1``."""
    items = [i.strip() for i in text(value).split(",") if i.strip()]
    return ",".join(i[5:] if i[:5] in {"gres:", "gres/"} else i for i in items)


def _time_limit(value: Any) -> int | None:
    n = num(value)
    # 22.05 prints INFINITE as NO_VAL-ish sentinels
    if n is None or n >= 0xFFFFFFFE:
        return None
    return n


# ---------------------------------------------------------------------- nodes / partitions
def nodes(text_: str | bytes | Doc) -> list[Node]:
    return [node(n) for n in load(text_, "nodes")]


def node(n: Doc) -> Node:
    try:
        st = states(n.get("state"))
        flags = set(st[1:]) | set(states(n.get("state_flags")))
        return Node(
            name=str(n["name"]),
            state=NodeState.parse(st[0] if st else ""),
            flags=frozenset(flags),
            cpus=num0(n.get("cpus")),
            alloc_cpus=num0(n.get("alloc_cpus")),
            real_memory=num0(n.get("real_memory")),
            alloc_memory=num0(n.get("alloc_memory")),
            gres=Gres.parse_list(text(n.get("gres"))),
            gres_used=Gres.parse_list(text(n.get("gres_used"))),
            features=word_list(n.get("active_features") or n.get("features")),
            partitions=word_list(n.get("partitions")),
            weight=num0(n.get("weight")) or 1,
            reason=text(n.get("reason")),
            address=text(n.get("address")),
            port=num(n.get("port")),
            tres=Tres.parse(text(n.get("tres"))),
            tres_used=Tres.parse(text(n.get("tres_used"))),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError(f"node record not understood: {exc!r}") from exc


def partitions(text_: str | bytes | Doc) -> list[Partition]:
    return [partition(p) for p in load(text_, "partitions")]


def partition(p: Doc) -> Partition:
    flags = states(p.get("flags")) + states((p.get("partition") or {}).get("state"))
    nodes_ = p.get("nodes")
    node_list = text(nodes_.get("configured")) if isinstance(nodes_, Mapping) else text(nodes_)
    maximums = p.get("maximums") if isinstance(p.get("maximums"), Mapping) else {}
    return Partition(
        name=str(p["name"]),
        nodes=node_list,
        default="DEFAULT" in flags or bool(p.get("default")),
        state=(
            states(p.get("state"))
            or [s for s in flags if s in {"UP", "DOWN", "DRAIN", "INACTIVE"}]
            or ["UP"]
        )[0],
        max_time_min=_time_limit(maximums.get("time") if maximums else p.get("maximum_time")),
        total_cpus=num0(
            (p.get("cpus") or {}).get("total")
            if isinstance(p.get("cpus"), Mapping)
            else p.get("total_cpus")
        ),
        total_nodes=num0(
            (nodes_ or {}).get("total") if isinstance(nodes_, Mapping) else p.get("total_nodes")
        ),
        qos=text(
            (p.get("qos") or {}).get("assigned")
            if isinstance(p.get("qos"), Mapping)
            else p.get("qos")
        ),
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
        grp_tres=tres_list(tres.get("total") or tres.get("group", {}).get("active")),
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


# ---------------------------------------------------------------------- 22.05 text forms
# Slurm 22.05 has no JSON for partitions (sinfo --json lists only nodes) nor for sacctmgr;
# these read the stable one-line and --parsable2 forms instead.
ASSOC_FIELDS = (
    "Cluster",
    "Account",
    "User",
    "ParentName",
    "Partition",
    "QOS",
    "DefaultQOS",
    "GrpTRES",
    "MaxTRES",
    "Share",
)
QOS_FIELDS = (
    "Name",
    "Priority",
    "Preempt",
    "PreemptMode",
    "GrpTRES",
    "MaxTRESPerJob",
    "MaxTRESPerUser",
    "Flags",
    "Description",
)


def _rows(text_: str, fields: tuple[str, ...]) -> list[dict[str, str]]:
    rows = []
    for line in text_.splitlines():
        if not line.strip():
            continue
        values = line.split("|")
        if len(values) != len(fields):
            raise ParseError(f"expected {len(fields)} fields, got {len(values)}: {line!r}")
        rows.append(dict(zip(fields, values, strict=True)))
    return rows


def associations_parsable(text_: str) -> list[Association]:
    return [
        Association(
            cluster=r["Cluster"],
            account=r["Account"],
            user=r["User"],
            parent=r["ParentName"],
            partition=r["Partition"],
            qos=word_list(r["QOS"]),
            default_qos=r["DefaultQOS"],
            grp_tres=Tres.parse(r["GrpTRES"]),
            max_tres_per_job=Tres.parse(r["MaxTRES"]),
            shares=num(r["Share"]),
        )
        for r in _rows(text_, ASSOC_FIELDS)
    ]


def qos_parsable(text_: str) -> list[Qos]:
    return [
        Qos(
            name=r["Name"],
            priority=num0(r["Priority"]),
            preempt=word_list(r["Preempt"]),
            preempt_mode=tuple(w.upper() for w in word_list(r["PreemptMode"])),
            grp_tres=Tres.parse(r["GrpTRES"]),
            max_tres_per_job=Tres.parse(r["MaxTRESPerJob"]),
            max_tres_per_user=Tres.parse(r["MaxTRESPerUser"]),
            flags=word_list(r["Flags"]),
            description=r["Description"],
        )
        for r in _rows(text_, QOS_FIELDS)
    ]


def partitions_text(text_: str) -> list[Partition]:
    """``scontrol --oneliner show partitions``: one ``Key=Value …`` record per line."""
    out = []
    for line in text_.splitlines():
        kv = dict(item.split("=", 1) for item in line.split() if "=" in item)
        if "PartitionName" not in kv:
            continue
        out.append(
            Partition(
                name=kv["PartitionName"],
                nodes=kv.get("Nodes", "") if kv.get("Nodes") != "(null)" else "",
                default=kv.get("Default") == "YES",
                state=kv.get("State", "UP"),
                max_time_min=_minutes(kv.get("MaxTime", "UNLIMITED")),
                total_cpus=num0(kv.get("TotalCPUs")),
                total_nodes=num0(kv.get("TotalNodes")),
                qos=kv.get("QoS", "") if kv.get("QoS") not in {"N/A", None} else "",
            )
        )
    return out


def _minutes(value: str) -> int | None:
    """Slurm time ``[days-]hours:minutes:seconds`` or minutes -> minutes; UNLIMITED -> None."""
    if value.upper() in {"UNLIMITED", "INFINITE", "NONE", ""}:
        return None
    days, _, rest = value.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    h, m, sec = parts[-3:]
    return (int(days) if days else 0) * 1440 + h * 60 + m + (1 if sec else 0)


def ids(values: Iterable[Any]) -> list[int]:
    return [v for v in (num(x) for x in values) if v is not None]
