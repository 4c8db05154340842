"""Render the lab cluster's configuration files from the GRES inventory and the lab config.

GRES lines come from ``gres.render`` — the same code the Ansible roles use — never re-derived.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import jinja2

from aipool.lab.config import PACKAGE_DIR, LabConfig
from aipool.lab.daemons import LabError
from aipool.lab.power import CONFIG_FILE, lab_power, program_files
from gres.inventory import Inventory, NodeInventory
from gres.naming import ACCEL_KINDS
from gres.render import (
    accounting_tres,
    gres_types,
    render_gres_conf,
    render_node_lines,
    render_task_prolog,
)
from gres.topology import render_topology_conf
from slurm_plugins.admission import HOOK_FILE, load_policy, render_hook
from slurm_plugins.admission.config import LAB_POLICY, Kind, PolicyConfig, Pool
from slurm_plugins.admission.render import ADMISSION_SUBDIR
from slurm_plugins.client.versions import Release, select_type_parameters
from slurm_plugins.power.render import render_power_lines

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(PACKAGE_DIR / "templates"),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    autoescape=False,  # noqa: S701 - Slurm config files, not HTML
)


@dataclass(frozen=True, slots=True)
class Partition:
    name: str
    nodes: tuple[str, ...]
    default: bool = False


def partitions(inv: Inventory) -> list[Partition]:
    """GPU, NPU, CPU and (with MLU, DCU or XPU nodes) ``accel`` partitions: accelerator work
    never lands on the wrong kind of node."""

    def names(kind: str) -> tuple[str, ...]:
        return tuple(n.name for n in inv.nodes if node_kind(n) == kind)

    parts = [
        Partition("gpu", names("gpu"), default=True),
        Partition("npu", names("npu")),
        Partition("cpu", names("cpu")),
        Partition("accel", names("accel")),
    ]
    return [p for p in parts if p.nodes]


def node_kind(node: NodeInventory) -> str:
    if node.gpus:
        return "gpu"
    if node.npus or node.vnpus:
        return "npu"
    if node.accels:
        return "accel"
    return "cpu"


def lab_policy(inv: Inventory) -> PolicyConfig:
    """The lab's admission policy; a lab with an ``accel`` partition (MLU, DCU and XPU nodes)
    gets a shared pool for it, so the default lab's policy stays as its file says."""
    policy = load_policy(LAB_POLICY)
    if not any(p.name == "accel" for p in partitions(inv)):
        return policy
    gres = {**policy.cluster.gres, **dict.fromkeys(ACCEL_KINDS, Kind.ACCEL)}
    pools = (*policy.pools, Pool("accel", Kind.ACCEL, ("accel",), shared=True))
    return replace(policy, cluster=replace(policy.cluster, gres=gres), pools=pools)


def node_extra(
    cfg: LabConfig, inv: Inventory, power_saved: tuple[str, ...] = ()
) -> dict[str, dict[str, str]]:
    """Every lab node is one ``slurmd -N`` on this host, with its own port; a power-saved one
    is a cloud node: it starts powered down and Slurm does not wait for it."""
    return {
        n.name: {
            "NodeHostname": "localhost",
            "NodeAddr": cfg.address,
            "Port": str(cfg.ports.slurmd_base + i),
            **({"State": "CLOUD"} if n.name in power_saved else {}),
        }
        for i, n in enumerate(inv.nodes)
    }


def power_files(cfg: LabConfig, inv: Inventory) -> tuple[str, tuple[str, ...], dict[str, str]]:
    """slurm.conf's power-saving lines, the power-saved nodes and the files beside (the
    configuration and the programs); nothing for a lab without elastic nodes."""
    found = lab_power(cfg)
    if found is None:
        return "", (), {}
    power, text = found
    parts = {p.name: p.nodes for p in partitions(inv)}
    names = tuple(n.name for n in inv.nodes)
    unknown = sorted(set(power.nodes) - set(names))
    if unknown:
        raise LabError(f"{cfg.power}: nodes {', '.join(unknown)} are not in {cfg.inventory}")
    lines = render_power_lines(power, cfg.etc, parts, names, debug=True)
    return lines.rstrip("\n"), power.nodes, {CONFIG_FILE: text, **program_files(cfg)}


def render_lab(
    cfg: LabConfig,
    inv: Inventory,
    *,
    db_password: str,
    job_submit: bool = False,
    loopback_only: bool = True,
    release: Release = (22, 5),
) -> dict[str, str]:
    """File name (relative to ``cfg.etc``) -> content, for Slurm ``release`` (what differs
    between releases: :mod:`slurm_plugins.client.versions`).

    ``loopback_only`` keeps every daemon off 0.0.0.0: each binds to the address of its host
    name, which the lab maps to its own address (``Lab.as_lab_host``).
    ``job_submit`` adds the admission hook and its table (from the lab policy, the table in
    ``admission/``), listed first so they exist before a slurm.conf that loads them.
    """
    hook: dict[str, str] = {}
    if job_submit:
        # slurmctld's hook reads the table from the portal's directory; beside the table,
        # the same pair as the portal writes (it explains refusals with that hook)
        policy = lab_policy(inv)
        pair = render_hook(policy, release=release)
        hook = {f"{ADMISSION_SUBDIR}/{name}": text for name, text in pair.items()}
        hook[HOOK_FILE] = render_hook(policy, table_dir=ADMISSION_SUBDIR, release=release)[
            HOOK_FILE
        ]
    power_lines, power_saved, power = power_files(cfg, inv)
    slurm_conf = _ENV.get_template("slurm.conf.j2").render(
        cfg=cfg,
        gres_types=gres_types(inv),
        accounting_tres=accounting_tres(inv),
        node_lines=render_node_lines(inv, node_extra(cfg, inv, power_saved)).rstrip("\n"),
        power_lines=power_lines,
        partitions=partitions(inv),
        job_submit=job_submit,
        loopback_only=loopback_only,
        topology=not inv.topology.empty,
        select_type_parameters=select_type_parameters(release),
    )
    dbd_conf = _ENV.get_template("slurmdbd.conf.j2").render(
        cfg=cfg, db_password=db_password, loopback_only=loopback_only
    )
    # topology.conf only for an inventory that names switches: the default lab has none, and
    # keeps Slurm's topology/none
    topology = {} if inv.topology.empty else {"topology.conf": render_topology_conf(inv.topology)}
    return {
        **hook,
        **topology,
        **power,
        "slurm.conf": slurm_conf,
        "slurmdbd.conf": dbd_conf,
        "gres.conf": render_gres_conf(inv),
        "taskprolog.sh": render_task_prolog(inv),
    }
