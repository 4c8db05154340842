"""``aipool models mirror fill|list``: the site's offline mirror of the presets' weights
(:mod:`portal.presets.hubs` does the work; docs/models.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from translations import normalise


def _locale() -> str:
    """The site's language (its ``AIPOOL_DEFAULT_LOCALE``), else the shell's."""
    return normalise(os.environ.get("AIPOOL_DEFAULT_LOCALE") or os.environ.get("LANG"))


def _mirror(given: Path | None) -> Path:
    found = given or os.environ.get("AIPOOL_MODEL_MIRROR") or os.environ.get("MODEL_MIRROR")
    if not found:
        raise click.UsageError("give --mirror DIR (or set AIPOOL_MODEL_MIRROR)")
    return Path(found)


MIRROR_OPTION = click.option(
    "--mirror",
    "mirror_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The mirror directory (default: AIPOOL_MODEL_MIRROR).",
)


@click.group("models")
def models() -> None:
    """Preset models: the offline mirror of their weights."""


@models.group("mirror")
def mirror_group() -> None:
    """Fill and list the offline mirror (MIRROR/<hub repository>)."""


@mirror_group.command("fill")
@click.argument("names", metavar="PRESET…", nargs=-1, required=True)
@click.option(
    "--from",
    "source",
    required=True,
    help="huggingface, modelscope, or a directory holding a snapshot (DIR/<repo> or DIR).",
)
@click.option("--endpoint", help="The hub's address (default: AIPOOL_HF_ENDPOINT, HF_ENDPOINT…).")
@click.option("--revision", help="A commit or branch (default: the preset's).")
@MIRROR_OPTION
def fill(
    names: tuple[str, ...],
    source: str,
    endpoint: str | None,
    revision: str | None,
    mirror_dir: Path | None,
) -> None:
    """Download (or copy) the files of each PRESET, checked against the hub's checksums."""
    from portal.presets.catalog import Preset, get
    from portal.presets.hubs import fill as fill_repo
    from portal.presets.mirror import MirrorError

    mirror = _mirror(mirror_dir)
    if source not in ("huggingface", "modelscope") and not Path(source).is_dir():
        raise click.BadParameter("huggingface, modelscope or a directory", param_hint="--from")
    presets: list[tuple[Preset, str]] = []
    for name in names:
        preset = get(name)
        if preset is None or not preset.mirror:
            raise click.BadParameter(
                f"{name}: no such preset with hub weights", param_hint="PRESET"
            )
        if preset.mirror not in {repo for _, repo in presets}:  # presets may share weights
            presets.append((preset, preset.mirror))
    mirror.mkdir(parents=True, exist_ok=True)
    for preset, repo in presets:
        try:
            manifest = fill_repo(
                mirror,
                repo,
                source,
                # the preset's revision is a Hugging Face one; ModelScope's default is its own
                revision=revision or (None if source == "modelscope" else preset.revision),
                modelscope_id=preset.modelscope,
                patterns=preset.files,
                endpoint=endpoint,
                progress=lambda line: click.echo(f"  {line}", err=True),
            )
        except MirrorError as exc:
            raise click.ClickException(f"{preset.name}: {exc.message.render(_locale())}") from None
        size = manifest.size / 2**20
        click.echo(
            f"{preset.name}: {manifest.repo} {len(manifest.files)} files, {size:.1f} MiB, "
            f"{manifest.commit or manifest.source}"
        )


@mirror_group.command("list")
@MIRROR_OPTION
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_(mirror_dir: Path | None, as_json: bool) -> None:
    """What the mirror holds for each preset with hub weights: present, partial or absent."""
    from dataclasses import asdict

    from portal.presets.catalog import presets
    from portal.presets.mirror import status

    mirror = _mirror(mirror_dir)
    rows = status(mirror, [(p.name, p.mirror) for p in presets().values() if p.mirror])
    if as_json:
        click.echo(json.dumps([asdict(r) for r in rows], indent=2))
        return
    click.echo(f"{'preset':<24} {'repo':<46} {'state':<8} {'files':>5} {'MiB':>9}  source")
    for r in rows:
        click.echo(
            f"{r.preset:<24} {r.repo:<46} {r.state.value:<8} {r.files:>5} "
            f"{r.size / 2**20:>9.1f}  {r.source} {r.revision}".rstrip()
        )
