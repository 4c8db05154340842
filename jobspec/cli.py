"""``aipool submit | jobs | job | cancel | template``: job specs from the command line.

Settings come from the environment once, here at the edge (``AIPOOL_STATE_DIR``,
``AIPOOL_CLUSTER``, ``AIPOOL_DATA_ROOT``, ``AIPOOL_MODEL_ROOT``, ``AIPOOL_CONDA_SH``); Slurm's
own (``SLURM_CONF``) reach the Slurm client unchanged. Tests pass a client and settings in
``ctx.obj``.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import IO, Any

import click

from jobspec.codec import spec_to_data
from jobspec.errors import JobSpecError, SpecError
from jobspec.files import load_spec_file, spec_to_yaml
from jobspec.library import History, Templates, merge, parse_override
from jobspec.messages import in_words
from jobspec.model import Spec
from jobspec.options import ClusterConfig
from jobspec.render import render
from jobspec.schema import load_spec
from jobspec.status import connection_path, parse_progress, read_connection, read_tail
from jobspec.submit import check_paths, plan, submit_specs
from slurm_plugins.client import JobNotFound, SlurmClient, SlurmError
from slurm_plugins.client import labels as job_labels
from translations import N_, gettext, reader_locale


@dataclass(frozen=True)
class Settings:
    state_dir: Path
    cluster: str = "local"
    cluster_config: ClusterConfig = field(default_factory=ClusterConfig)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ) if env is None else env
        home = Path(env["HOME"]) if env.get("HOME") else Path.home()
        default_state = Path(env.get("XDG_STATE_HOME") or home / ".local/state") / "aipool"
        base = ClusterConfig()
        cfg = replace(
            base,
            data_root=env.get("AIPOOL_DATA_ROOT") or base.data_root,
            model_root=env.get("AIPOOL_MODEL_ROOT") or base.model_root,
            conda_sh=env.get("AIPOOL_CONDA_SH") or base.conda_sh,
            runtime=env.get("AIPOOL_RUNTIME") or base.runtime,
        )
        return cls(
            state_dir=Path(env.get("AIPOOL_STATE_DIR") or default_state),
            cluster=env.get("AIPOOL_CLUSTER") or "local",
            cluster_config=cfg,
        )

    @property
    def history(self) -> History:
        return History(self.state_dir / "history")

    @property
    def templates(self) -> Templates:
        return Templates(self.state_dir / "templates")


def _settings(ctx: click.Context) -> Settings:
    obj = ctx.find_object(dict) or {}
    settings = obj.get("jobspec_settings")
    return settings if isinstance(settings, Settings) else Settings.from_env()


def _client(ctx: click.Context) -> SlurmClient:
    obj = ctx.find_object(dict) or {}
    client = obj.get("slurm_client")
    return client if isinstance(client, SlurmClient) else SlurmClient()


class _Refused(click.ClickException):
    """click's error, its ``Error:`` in the reader's language as well."""

    def __init__(self, message: str, locale: str) -> None:
        super().__init__(message)
        self.locale = locale

    def show(self, file: IO[Any] | None = None) -> None:
        line = gettext(self.locale, N_("Error: %(error)s"), error=self.format_message())
        click.echo(line, file=file, err=file is None)


def _fail(exc: Exception) -> click.ClickException:
    """The error for the terminal; a spec's errors in the reader's language (``LANG``)."""
    locale = reader_locale()
    if isinstance(exc, SpecError):
        return _Refused("\n".join(in_words(m, locale) for m in exc.messages), locale)
    return _Refused(str(exc), locale)


def _overrides(items: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        out = merge(out, parse_override(item))
    return out


def _collect(
    settings: Settings,
    files: tuple[str, ...],
    template: str | None,
    rerun: int | None,
    overrides: dict[str, Any],
) -> list[Spec]:
    specs: list[Spec] = []
    for path in files:
        specs += load_spec_file(path)
    if overrides and specs:
        specs = [load_spec(merge(spec_to_data(s), overrides)) for s in specs]
    if template:
        specs.append(settings.templates.instantiate(template, overrides))
    if rerun is not None:
        specs.append(settings.history.rerun_spec(settings.cluster, rerun, overrides))
    if not specs:
        raise SpecError(["nothing to submit: give spec files, --template or --rerun"])
    return specs


@click.command("submit")
@click.argument("spec_files", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Print the sbatch argv and scripts; submit nothing.")
@click.option("--as-user", metavar="USER", help="Submit as this Unix user (root only).")
@click.option("--template", metavar="NAME", help="Add a spec made from a saved template.")
@click.option("--rerun", type=int, metavar="JOB_ID", help="Add the recorded spec of a job.")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a field, e.g. --set resources.gpus=0.5 (repeatable).",
)
@click.option("--no-check-paths", is_flag=True, help="Do not check that directories exist here.")
@click.option(
    "--cluster",
    "target",
    metavar="NAME|auto",
    help="Submit to this cluster (sbatch -M), or let AIPool pick one with room (auto).",
)
@click.pass_context
def submit(
    ctx: click.Context,
    *,
    spec_files: tuple[str, ...],
    dry_run: bool,
    as_user: str | None,
    template: str | None,
    rerun: int | None,
    sets: tuple[str, ...],
    no_check_paths: bool,
    target: str | None,
) -> None:
    """Submit job specs (YAML or JSON); specs in one call may depend on each other by name.

    With --cluster auto, all specs of the call go to the cluster AIPool picks for the first
    (free capacity of its kind, the project's allowed clusters, its data's location; policy
    file in AIPOOL_FEDERATION_POLICY)."""
    settings = _settings(ctx)
    try:
        specs = _collect(settings, spec_files, template, rerun, _overrides(sets))
        if not no_check_paths:
            problems = [
                f"{s.name}: {p}" for s in specs for p in check_paths(s, settings.cluster_config)
            ]
            if problems:
                raise SpecError(problems)
        if dry_run:
            for spec, rendered in plan(specs, settings.cluster_config):
                click.echo(f"# {spec.name}")
                click.echo(rendered.command_line())
                click.echo(rendered.script)
            return
        client, history_cluster = _client(ctx), settings.cluster
        if target:
            client = _target_client(client, target, specs[0], settings.cluster_config)
            history_cluster = client.cluster or settings.cluster
        done = submit_specs(
            specs,
            client,
            cfg=settings.cluster_config,
            as_user=as_user,
            history=settings.history,
            cluster=history_cluster,
        )
    except (JobSpecError, SlurmError, ValueError) as exc:
        raise _fail(exc) from None
    for s in done:
        click.echo(f"{s.job_id}\t{s.name}")


def _target_client(
    client: SlurmClient, target: str, spec: Spec, cfg: ClusterConfig | None
) -> SlurmClient:
    """``--cluster NAME`` binds the client to that cluster; ``auto`` lets the first level pick."""
    from slurm_plugins.federation import request_of
    from slurm_plugins.federation.choose import choose, policy_from_env
    from slurm_plugins.federation.model import Kind

    if target != "auto":
        known = client.clusters()
        if target not in known:
            raise ValueError(f"--cluster: unknown cluster {target!r} (known: {', '.join(known)})")
        return client.on(target)
    # the job as it will be submitted (dependencies on the call's other specs as placeholders)
    rendered = render(spec, cfg, dependencies={n: f"<{n}>" for n in spec.spec_dependencies})
    data = next((m.name for m in spec.mounts if m.kind.value == "data"), None)
    req = request_of(rendered.request, data=data)
    decision, chosen = choose(client, req, policy_from_env())
    now = "starts now" if decision.starts_now else "queued"
    kind = "cpu" if req.kind is Kind.CPU else req.kind.value
    click.echo(f"cluster {decision.cluster} ({kind}, {now}): {decision.explain()}", err=True)
    return chosen


@click.command("jobs")
@click.option("--all", "show_all", is_flag=True, help="Also jobs not submitted from a spec.")
@click.option(
    "--cluster", "target", metavar="NAME|all", help="Jobs of this cluster, or of every cluster."
)
@click.pass_context
def jobs(ctx: click.Context, show_all: bool, target: str | None) -> None:
    """Queued and running jobs."""
    client = _client(ctx)
    try:
        names = client.clusters() if target == "all" else [target] if target else []
        listed = [j for n in names for j in client.on(n).jobs()] if names else client.jobs()
    except SlurmError as exc:
        raise _fail(exc) from None
    where = f"{'CLUSTER':<10} " if names else ""
    click.echo(f"{'JOBID':>8}  {where}{'NAME':<24} {'STATE':<11} {'NODES':<16} REASON")
    for j in listed:
        if not show_all and not job_labels.decode(j.comment):
            continue
        reason = j.reason if j.reason not in ("None", "") else ""
        cluster = f"{j.cluster[:10]:<10} " if names else ""
        click.echo(
            f"{j.job_id:>8}  {cluster}{j.name[:24]:<24} {j.state.value:<11} {j.nodes[:16]:<16}"
            f" {reason}"
        )


def job_report(client: SlurmClient, settings: Settings, job_id: int) -> dict[str, Any]:
    """Everything ``aipool job`` shows, as data."""
    report: dict[str, Any] = {"job_id": job_id}
    try:
        j = client.job(job_id)
        report.update(
            name=j.name,
            state=j.state.value,
            reason=j.reason,
            nodes=j.nodes,
            user=j.user,
            output=j.stdout_file,
            labels=job_labels.decode(j.comment),
        )
    except JobNotFound:
        acct = client.accounting(job_ids=[job_id])
        if not acct:
            raise
        a = acct[0]
        report.update(
            name=a.name,
            state=a.state.value,
            reason="",
            nodes=a.nodes,
            user=a.user,
            output="",
            labels=job_labels.decode(a.comment),
        )
    if report["output"]:
        report["progress"] = parse_progress(read_tail(report["output"]))
        if report["labels"].get("jupyter"):
            conn = read_connection(connection_path(Path(report["output"]).parent, job_id))
            report["jupyter"] = asdict(conn) if conn else None
    if settings.history.has(settings.cluster, job_id):
        report["spec"] = spec_to_data(settings.history.spec(settings.cluster, job_id))
    return report


@click.command("job")
@click.argument("job_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def job(ctx: click.Context, job_id: int, as_json: bool) -> None:
    """One job: its spec, state, reason, node, progress (and Jupyter address)."""
    settings = _settings(ctx)
    try:
        report = job_report(_client(ctx), settings, job_id)
    except (JobSpecError, SlurmError) as exc:
        raise _fail(exc) from None
    if as_json:
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
        return
    for key in ("job_id", "name", "state", "reason", "nodes", "user", "output"):
        if report.get(key) not in (None, ""):
            click.echo(f"{key + ':':<9} {report[key]}")
    if report.get("progress") is not None:
        click.echo(f"progress: {report['progress']:.0f}%")
    if conn := report.get("jupyter"):
        click.echo(f"jupyter:  {conn['url']}")
    if "spec" in report:
        click.echo("spec:")
        click.echo("  " + spec_to_yaml(load_spec(report["spec"])).replace("\n", "\n  ").rstrip())


@click.command("cancel")
@click.argument("job_ids", nargs=-1, required=True, type=int)
@click.pass_context
def cancel(ctx: click.Context, job_ids: tuple[int, ...]) -> None:
    """Cancel jobs (a Jupyter job stops its server)."""
    try:
        _client(ctx).cancel(job_ids)
    except SlurmError as exc:
        raise _fail(exc) from None
    click.echo(f"cancelled {' '.join(str(i) for i in job_ids)}")


@click.group("template")
def template() -> None:
    """Named spec templates."""


@template.command("save")
@click.argument("name")
@click.argument("spec_file", type=click.Path(dir_okay=False, exists=True))
@click.pass_context
def template_save(ctx: click.Context, name: str, spec_file: str) -> None:
    """Save the spec in SPEC_FILE as template NAME."""
    try:
        specs = load_spec_file(spec_file)
        if len(specs) != 1:
            raise SpecError(["a template holds exactly one spec"])
        path = _settings(ctx).templates.save(name, specs[0])
    except JobSpecError as exc:
        raise _fail(exc) from None
    click.echo(f"saved {path}")


@template.command("list")
@click.pass_context
def template_list(ctx: click.Context) -> None:
    """Names of the saved templates."""
    for name in _settings(ctx).templates.names():
        click.echo(name)


@template.command("show")
@click.argument("name")
@click.pass_context
def template_show(ctx: click.Context, name: str) -> None:
    """Print a template."""
    try:
        click.echo(spec_to_yaml(_settings(ctx).templates.instantiate(name)).rstrip())
    except JobSpecError as exc:
        raise _fail(exc) from None


COMMANDS: list[click.Command] = [submit, jobs, job, cancel, template]
