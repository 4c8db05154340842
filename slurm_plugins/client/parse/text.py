"""Slurm 22.05 text forms: it has no JSON for partitions (sinfo --json lists only nodes)
nor for sacctmgr, so these read the stable one-line and ``--parsable2`` forms."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from slurm_plugins.client.errors import ParseError
from slurm_plugins.client.models import (
    Association,
    Controller,
    Partition,
    Qos,
    SchedulerCounters,
    Tres,
)
from slurm_plugins.client.parse.shapes import (
    num,
    num0,
    word_list,
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
    "GrpTRESMins",
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
            grp_tres_mins=Tres.parse(r["GrpTRESMins"]),
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


def leaf_switches(text_: str, expand: Callable[[str], Sequence[str]]) -> dict[str, str]:
    """``scontrol show topology``: node -> the leaf switch (``Level=0``) it hangs off; empty
    without a topology plugin (Slurm then prints no ``SwitchName=`` record)."""
    out: dict[str, str] = {}
    for line in text_.splitlines():
        kv = dict(item.split("=", 1) for item in line.split() if "=" in item)
        if "SwitchName" in kv and kv.get("Level") == "0" and kv.get("Nodes"):
            out.update(dict.fromkeys(expand(kv["Nodes"]), kv["SwitchName"]))
    return out


_PING = re.compile(r"^Slurmctld\((?P<role>[a-z]+\d*)\) at (?P<host>\S+) is (?P<state>[A-Z]+)")


def controllers_text(out: str) -> list[Controller]:
    """``scontrol ping``: one line per ``SlurmctldHost``, primary first, e.g.
    ``Slurmctld(backup1) at ctl2 is UP``; the banner lines after a DOWN are skipped."""
    found = [m for line in out.splitlines() if (m := _PING.match(line.strip()))]
    return [Controller(i, m["role"], m["host"], m["state"] == "UP") for i, m in enumerate(found)]


_COUNTER = re.compile(r"^Jobs (submitted|started|completed|canceled|failed):\s+(\d+)\s*$")


def sdiag_counters(out: str) -> SchedulerCounters:
    """``sdiag``'s job counters (``Jobs submitted: 2080`` …); a missing one is an error."""
    found = {m[1]: int(m[2]) for line in out.splitlines() if (m := _COUNTER.match(line.strip()))}
    if len(found) < 5:
        raise ParseError(f"sdiag printed no job counters: {out[:200]!r}")
    return SchedulerCounters(**found)
