"""``aipool backup``: create, verify, restore and prune archives (docs/backup.md)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import click

from aipool.backup import archive, create, restore
from aipool.backup.manifest import BackupError
from aipool.backup.site import Site, SystemdDbd
from translations import LOCALES, N_, Message, reader_locale

DEFAULT_DIR = Path("/var/backups/aipool")
SITE_CONFIG_DIRS = (("slurm", Path("/etc/slurm")), ("aipool", Path("/etc/aipool")))
SITE_DBD_CONF = Path("/etc/slurm/slurmdbd.conf")


@dataclass(frozen=True, slots=True)
class _Labbed:
    """slurmdbd of the lab: stopped through the lab's ledger, started by ``lab up``."""

    lab: Any

    def stop(self) -> None:
        self.lab.stop_named(("slurmdbd",))

    def start(self) -> None:
        self.lab.up()


def lab_site() -> tuple[Site, dict[str, str]]:
    """The lab's parts (``--lab``), and the environment its Slurm commands need."""
    from aipool.lab import host
    from aipool.lab.cluster import Lab
    from aipool.lab.services import portal_db

    lab = Lab()
    cfg = lab.cfg
    home = cfg.root / "portal"

    def portal_running() -> bool:
        return bool(lab.status()["daemons"].get("portal", {}).get("running"))

    site = Site(
        cluster=cfg.cluster,
        database_url=portal_db(cfg),
        slurmdbd_conf=cfg.etc / "slurmdbd.conf",
        config_dirs=(("etc", cfg.etc),),
        stores=(("models", home / "models"), ("datasets", home / "datasets")),
        data_keys=(("etc/portal_secret", cfg.etc / "portal_secret"),),
        owner=host.SERVICE_USER,
        dbd=_Labbed(lab),
        portal_running=portal_running,
    )
    return site, dict(cfg.env())


def _pairs(values: tuple[str, ...], option: str) -> tuple[tuple[str, Path], ...]:
    out = []
    for value in values:
        label, sep, path = value.partition("=")
        if not sep or not label.isidentifier() or not path.startswith("/"):
            raise click.BadParameter(f"LABEL=/absolute/path, not {value!r}", param_hint=option)
        out.append((label, Path(path)))
    return tuple(out)


def _site_stores() -> tuple[tuple[str, Path], ...]:
    home = os.environ.get("AIPOOL_PORTAL_HOME")
    stores = []
    for label, var in (("models", "AIPOOL_MODEL_STORAGE"), ("datasets", "AIPOOL_DATASET_STORAGE")):
        if where := os.environ.get(var) or (home and os.path.join(home, label)):
            stores.append((label, Path(where)))
    return tuple(stores)


def site_from(opts: dict[str, Any]) -> tuple[Site, dict[str, str]]:
    """The parts to take or restore: the lab's with ``--lab``, else the site's options."""
    if opts["lab"]:
        return lab_site()
    config_dirs = _pairs(opts["config_dir"], "--config-dir") or tuple(
        (label, d) for label, d in SITE_CONFIG_DIRS if d.is_dir()
    )
    dbd_conf = opts["slurmdbd_conf"] or (SITE_DBD_CONF if SITE_DBD_CONF.exists() else None)
    site = Site(
        cluster=opts["cluster"],
        database_url=opts["database_url"],
        slurmdbd_conf=None if opts["no_slurmdbd"] else dbd_conf,
        config_dirs=config_dirs,
        stores=_pairs(opts["store"], "--store") or _site_stores(),
        owner=opts["owner"],
        dbd=SystemdDbd(),
    )
    return site, dict(os.environ)


def site_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Where the parts are: ``--lab``, or a site's paths (defaults: docs/backup.md)."""
    options = [
        click.option("--lab", is_flag=True, help="The lab cluster's parts (aipool lab up)."),
        click.option("--cluster", envvar="AIPOOL_CLUSTER", default="site", show_default=True),
        click.option("--database-url", envvar="AIPOOL_DATABASE_URL", help="The portal's DB."),
        click.option("--slurmdbd-conf", type=click.Path(path_type=Path, dir_okay=False)),
        click.option("--no-slurmdbd", is_flag=True, help="Leave slurmdbd's database out."),
        click.option("--config-dir", multiple=True, metavar="LABEL=DIR"),
        click.option("--store", multiple=True, metavar="LABEL=DIR"),
        click.option("--owner", default="aipool", show_default=True, help="Restored files' user."),
        click.option("--locale", type=click.Choice(sorted(LOCALES)), help="Messages' language."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _fail(exc: BackupError, locale: str | None) -> click.ClickException:
    return click.ClickException(exc.message.render(reader_locale(locale)))


def _say(message: Message, locale: str | None) -> None:
    click.echo(message.render(reader_locale(locale)))


def _slurm_version(env: dict[str, str]) -> str:
    from slurm_plugins.client import SlurmClient, SlurmError

    try:
        return SlurmClient(env=env, timeout=10).version()
    except (SlurmError, OSError):
        return "unknown"


@click.group()
def backup() -> None:
    """Backups of the portal's, accounting's and slurmdbd's data and the configuration."""


@backup.command("create")
@click.option("--include-files", is_flag=True, help="Store files in the archive, not by path.")
@click.option("--to", "to", type=click.Path(path_type=Path, file_okay=False), default=DEFAULT_DIR)
@site_options
def create_cmd(include_files: bool, to: Path, **opts: Any) -> None:
    """Write one checksummed archive of everything a restore needs."""
    try:
        site, env = site_from(opts)
        path, manifest = create.create(
            site,
            to,
            include_files=include_files,
            now=dt.datetime.now(dt.UTC),
            aipool_version=metadata.version("aipool"),
            slurm_version=_slurm_version(env),
        )
    except BackupError as exc:
        raise _fail(exc, opts["locale"]) from exc
    size = path.stat().st_size
    msg = N_("Wrote %(path)s (%(size)s bytes, %(count)s members, %(refs)s files by reference).")
    _say(
        Message.of(
            msg, path=path, size=size, count=len(manifest.members), refs=len(manifest.references)
        ),
        opts["locale"],
    )
    if left := manifest.parts.get("config_unreadable"):
        msg = N_("Left out, not readable by this user: %(files)s.")
        _say(Message.of(msg, files=", ".join(left)), opts["locale"])


@backup.command("verify")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--locale", type=click.Choice(sorted(LOCALES)), help="Messages' language.")
def verify_cmd(path: Path, locale: str | None) -> None:
    """Check an archive's structure, manifest and every checksum; restores nothing."""
    try:
        verified = archive.verify(path)
    except BackupError as exc:
        raise _fail(exc, locale) from exc
    m = verified.manifest
    _say(
        Message.of(
            N_("%(path)s is sound: %(count)s members, taken %(at)s on %(cluster)s."),
            path=path,
            count=len(m.members),
            at=m.created_at,
            cluster=m.cluster,
        ),
        locale,
    )
    if not verified.whole_file_checked:
        _say(Message.of(N_("There is no checksum file beside the archive.")), locale)


@backup.command("restore")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--force", is_flag=True, help="Replace a portal database that has data.")
@click.option("--config", "in_place", is_flag=True, help="Configuration back in place.")
@click.option(
    "--config-to",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where the configuration goes for review (default: beside the archive).",
)
@site_options
def restore_cmd(
    path: Path, force: bool, in_place: bool, config_to: Path | None, **opts: Any
) -> None:
    """Verify an archive, then restore it onto this site; says what it did."""
    staging = config_to or path.with_name(path.name.removesuffix(archive.SUFFIX) + ".config")
    options = restore.Options(force=force, config_in_place=in_place, config_to=staging)
    try:
        site, _ = site_from(opts)
        done = restore.restore(path, site, options)
    except BackupError as exc:
        raise _fail(exc, opts["locale"]) from exc
    for message in done:
        _say(message, opts["locale"])


@backup.command("prune")
@click.option("--to", "to", type=click.Path(path_type=Path, file_okay=False), default=DEFAULT_DIR)
@click.option("--keep", type=click.IntRange(min=1), default=1, help="The newest N stay.")
@click.option("--keep-days", type=click.FloatRange(min=0), help="Those younger stay too.")
@click.option("--locale", type=click.Choice(sorted(LOCALES)), help="Messages' language.")
def prune_cmd(to: Path, keep: int, keep_days: float | None, locale: str | None) -> None:
    """Remove the archives that retention lets go (the newest always stays)."""
    removed = create.prune(to, keep, keep_days, dt.datetime.now(dt.UTC))
    _say(Message.of(N_("Removed %(count)s archives."), count=len(removed)), locale)
    for p in removed:
        click.echo(f"  {p}")
