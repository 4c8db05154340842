"""Submit the specs of one submission through the Slurm client, dependencies first."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from jobspec.deps import submission_order
from jobspec.errors import SpecError, SubmitError
from jobspec.library import History
from jobspec.model import Resources, Spec
from jobspec.options import ClusterConfig
from jobspec.render import Rendered, render, resolve_mounts
from slurm_plugins.client import SlurmClient, SlurmError, versions

log = logging.getLogger("aipool.jobspec")


@dataclass(frozen=True, slots=True)
class Submitted:
    name: str
    job_id: int
    rendered: Rendered


def plan(specs: Sequence[Spec], cfg: ClusterConfig | None = None) -> list[tuple[Spec, Rendered]]:
    """What a dry run shows: every spec rendered, in submission order; the job ids of
    dependencies are shown as ``<name>``."""
    order = submission_order(specs)
    placeholders: dict[str, int | str] = {s.name: f"<{s.name}>" for s in order}
    return [(s, render(s, cfg, dependencies=placeholders)) for s in order]


def submit_specs(
    specs: Sequence[Spec],
    client: SlurmClient,
    *,
    cfg: ClusterConfig | None = None,
    as_user: str | None = None,
    history: History | None = None,
    cluster: str = "local",
) -> list[Submitted]:
    """Submit ``specs`` (dependencies first) and return their job ids in that order.

    If one submission fails, the jobs already submitted in this call are cancelled and
    :class:`SubmitError` says which spec failed and why (Slurm's own message).
    """
    ids: dict[str, int | str] = {}
    done: list[Submitted] = []
    check_release(specs, client)
    cfg = with_pool(specs, client, cfg)
    for spec in submission_order(specs):
        rendered = render(spec, cfg, dependencies=ids)
        try:
            job_id = client.submit(rendered.script, rendered.request, as_user=as_user)
        except SlurmError as exc:
            _roll_back(client, [s.job_id for s in done])
            raise SubmitError(
                f"{spec.name}: {exc}", submitted={s.name: s.job_id for s in done}
            ) from exc
        ids[spec.name] = job_id
        done.append(Submitted(spec.name, job_id, rendered))
        log.info("submitted %s as job %s", spec.name, job_id)
        if history is not None and job_id:
            history.record(cluster, job_id, spec)
    return done


def with_pool(
    specs: Sequence[Spec], client: SlurmClient, cfg: ClusterConfig | None
) -> ClusterConfig:
    """``cfg`` with the pool's card models (its nodes' features) when a spec asks for a
    precision and they are not known yet: a constraint may only name features nodes have."""
    cfg = cfg or ClusterConfig()
    if cfg.card_types is not None or not any(asks_precision(s) for s in specs):
        return cfg
    try:
        nodes = client.nodes()
    except SlurmError as exc:
        raise SubmitError(f"cannot list the pool's nodes: {exc}") from exc
    return replace(cfg, card_types=tuple(sorted({f for n in nodes for f in n.features})))


def check_release(specs: Sequence[Spec], client: SlurmClient) -> None:
    """Refuse, before anything is submitted, a share above one card (``gpus: 1.25``) on a
    Slurm that gives one job's shards from one card only (before 23.11)."""
    asking = [
        (f"{s.name}: {path}", r)
        for s in specs
        for path, r in resources_of(s)
        if r.shares_across_cards
    ]
    if not asking:
        return
    try:
        release = client.release_tuple()
    except SlurmError as exc:
        raise SubmitError(f"cannot tell the Slurm release: {exc}") from exc
    if versions.shards_across_cards(release):
        return
    raise SpecError(
        f"{path}.gpus: {float(r.gpus):g} cards: Slurm {release[0]}.{release[1]:02d} gives one "
        "job's shards from one card only; ask for whole cards or a share of one card "
        "(shares above one card need Slurm 23.11 or later)"
        for path, r in asking
    )


def resources_of(spec: Spec) -> list[tuple[str, Resources]]:
    """The spec's resources and each role's, with the path a message names them by."""
    return [
        ("resources", spec.resources),
        *((f"topology.roles.{r.name}.resources", r.resources) for r in spec.topology.roles),
    ]


def asks_precision(spec: Spec) -> bool:
    """Whether the spec (or one of its roles) names a precision: the pool's models matter."""
    return any(r.precision is not None for _, r in resources_of(spec))


def _roll_back(client: SlurmClient, job_ids: list[int]) -> None:
    if not job_ids:
        return
    try:
        client.cancel(job_ids)
    except SlurmError as exc:  # the original failure matters more; say what is left
        log.warning("could not cancel jobs %s after a failed submission: %s", job_ids, exc)


def check_paths(
    spec: Spec,
    cfg: ClusterConfig | None = None,
    *,
    is_dir: Callable[[str], bool] = os.path.isdir,
    exists: Callable[[str], bool] = os.path.exists,
) -> list[str]:
    """Paths a spec names that do not exist here (``path: problem`` lines).

    The working and output directories must exist before the job starts (Slurm opens the
    output file there). Mounts are checked again on the node when the job starts.
    """
    problems = []
    for field, path in (("workdir", spec.workdir), ("outputs", spec.outputs)):
        if path is not None and not is_dir(path):
            problems.append(f"{field}: directory {path} does not exist")
    for i, mount in enumerate(resolve_mounts(spec.mounts, cfg or ClusterConfig())):
        if not exists(mount.path):
            problems.append(f"mounts[{i}].path: {mount.path} does not exist")
    return problems
