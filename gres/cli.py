"""``gres`` command group: probe this host, render Slurm's GRES configuration from an inventory.

Mounted by the ``aipool`` console command as ``aipool gres …`` and runnable on its own as
``python -m gres …``. Importing this module has no side effects. Bad input (an inventory or an
``--extra`` file that does not validate) prints every ``path: message`` and exits with status 2,
without a traceback; failures to probe or write exit with status 1.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import click
import yaml

from gres.catalogue import default_catalogue
from gres.catalogue_features import with_catalogue_features
from gres.errors import InventoryError, ProbeError
from gres.inventory import Inventory, load_inventory
from gres.naming import DEFAULT_DEVICE_DIR
from gres.probe import probe_host
from gres.render import HEADER, render_all
from gres.topology import Topology, render_topology_conf

FILES = ("gres.conf", "nodes.conf", "taskprolog.sh")
TOPOLOGY_FILE = "topology.conf"
SETTINGS_FILE = "gres-settings.conf"
PARTS = (*FILES, SETTINGS_FILE, TOPOLOGY_FILE, "all")


def _fail(messages: list[str] | tuple[str, ...], code: int, prefix: str = "") -> NoReturn:
    for message in messages:
        click.echo(f"error: {prefix}{message}", err=True)
    raise click.exceptions.Exit(code)


@click.group(name="gres")
def cli() -> None:
    """GRES inventory: probe this host and render gres.conf, node lines and the TaskProlog."""


@cli.command()
@click.option("--name", help="Slurm node name [default: the short host name].")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["yaml", "json"]),
    default="yaml",
    show_default=True,
    help="Output format; both read back with `render --inventory`.",
)
@click.option(
    "--device-dir",
    default=DEFAULT_DEVICE_DIR,
    show_default=True,
    help="Directory of the nvidiaN / davinciN device files.",
)
def probe(name: str | None, fmt: str, device_dir: str) -> None:
    """Print this host as an inventory (GPUs via NVML, NPUs via npu-smi, CPUs, memory)."""
    try:
        node = probe_host(name, device_dir=device_dir)
    except ProbeError as exc:
        _fail([str(exc)], 1)
    inv = Inventory(nodes=(node,))
    if fmt == "json":
        click.echo(json.dumps(inv.to_dict(), indent=2))
    else:
        click.echo(inv.to_yaml(), nl=False)


def _load_extra(path: Path | None) -> dict[str, dict[str, str]]:
    """``--extra``: ``{node: {slurm.conf key: value}}`` added to each node line."""
    if path is None:
        return {}
    where = f"{path}: "
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        _fail([str(exc)], 2, where)
    if not isinstance(data, Mapping):
        _fail(["must be a mapping of node name to {key: value}"], 2, where)
    extra: dict[str, dict[str, str]] = {}
    for node, settings in data.items():
        if not isinstance(settings, Mapping) or not all(
            isinstance(v, str | int) and not isinstance(v, bool) for v in settings.values()
        ):
            _fail([f"{node}: must map slurm.conf keys to plain values"], 2, where)
        extra[str(node)] = {str(k): str(v) for k, v in settings.items()}
    return extra


def _settings(rendered: Mapping[str, str], topology: Topology) -> str:
    # topology/tree only where the inventory names switches: without a topology.conf that
    # puts every node under a switch, slurmctld would place no job on the nodes left out.
    plugin = "" if topology.empty else "TopologyPlugin=topology/tree\n"
    return (
        HEADER
        + f"GresTypes={rendered['GresTypes']}\n"
        + f"AccountingStorageTRES={rendered['AccountingStorageTRES']}\n"
        + plugin
    )


def _write(path: Path, text: str, mode: int) -> None:
    """Replace ``path`` atomically: slurmd and Ansible must never read a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@cli.command()
@click.option(
    "--inventory",
    "inventory_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Inventory YAML (see docs/gres.md).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the files into this directory instead of printing.",
)
@click.option(
    "--part", type=click.Choice(PARTS), default="all", show_default=True, help="What to render."
)
@click.option("--device-dir", help="Re-root every device file here (e.g. fake lab devices).")
@click.option(
    "--extra",
    "extra_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML {node: {NodeAddr: …, Port: …}} added to the node lines.",
)
@click.option(
    "--catalogue-features",
    is_flag=True,
    help="Add the precisions and score classes of each node's cards (bf16, bf16_ge200 …).",
)
def render(  # noqa: PLR0917 (one parameter per option)
    inventory_path: Path,
    out: Path | None,
    part: str,
    device_dir: str | None,
    extra_path: Path | None,
    catalogue_features: bool,
) -> None:
    """Render gres.conf, the NodeName lines, the TaskProlog, the GresTypes /
    AccountingStorageTRES (and TopologyPlugin) settings and topology.conf from an inventory."""
    try:
        inv = load_inventory(inventory_path)
        if device_dir is not None:
            inv = inv.with_device_dir(device_dir)
        if catalogue_features:
            inv = with_catalogue_features(inv, default_catalogue())
    except InventoryError as exc:
        _fail(exc.errors, 2, f"{inventory_path}: ")
    except ValueError as exc:
        _fail([str(exc)], 2, "--device-dir: ")
    try:
        rendered = render_all(inv, _load_extra(extra_path))
    except ValueError as exc:
        _fail([str(exc)], 2, f"{extra_path}: ")
    texts = {
        **{f: rendered[f] for f in FILES},
        SETTINGS_FILE: _settings(rendered, inv.topology),
        TOPOLOGY_FILE: render_topology_conf(inv.topology),
    }
    chosen = list(texts) if part == "all" else [part]
    if out is None:
        for name in chosen:
            if len(chosen) > 1:
                click.echo(f"==> {name} <==")
            click.echo(texts[name], nl=False)
        return
    for name in chosen:
        try:
            _write(out / name, texts[name], 0o755 if name.endswith(".sh") else 0o644)
        except OSError as exc:
            _fail([f"cannot write {out / name}: {exc}"], 1)
        click.echo(f"wrote {out / name}")
