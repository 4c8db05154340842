"""Jobs, nodes and partitions from squeue / sinfo / scontrol JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from slurm_plugins.client.errors import ParseError
from slurm_plugins.client.models import (
    Gres,
    Job,
    JobState,
    Node,
    NodeState,
    Partition,
    Tres,
)
from slurm_plugins.client.parse.shapes import (
    Doc,
    exit_code,
    job_state,
    limit_minutes,
    load,
    num,
    num0,
    states,
    text,
    when,
    word_list,
)


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
            state=JobState.parse(job_state(j.get("job_state"))),
            reason=text(j.get("state_reason")),
            priority=num0(j.get("priority")),
            site_factor=None,
            nice=num0(j.get("nice")),
            submit_time=when(j.get("submit_time")),
            start_time=when(j.get("start_time")),
            end_time=when(j.get("end_time")),
            time_limit_min=limit_minutes(j.get("time_limit")),
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
            requeue=bool(j.get("requeue", True)),
            eligible_time=when(j.get("eligible_time")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError(f"job record not understood: {exc!r}") from exc


def gres_request(value: Any) -> str:
    """``gres:gpu:a100:1`` (22.05) or ``gres/gpu:a100:1`` (24.11) -> ``gpu:a100:1``."""
    items = [i.strip() for i in text(value).split(",") if i.strip()]
    return ",".join(i[5:] if i[:5] in {"gres:", "gres/"} else i for i in items)


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
        max_time_min=limit_minutes(maximums.get("time") if maximums else p.get("maximum_time")),
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
