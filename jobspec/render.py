"""Render a spec to a job request and a batch script (given to Slurm with the request).

Templates are Jinja2 with ``StrictUndefined``; a ``finalize`` hook shell-quotes every value
(``shlex.quote``), so text from a spec can only ever be one shell word of data. Values our own
code builds from several words are marked :class:`Shell` by the ``words``/``ident`` filters.
Options never appear as ``#SBATCH`` lines: the request goes to Slurm as argv or REST
properties (:class:`~slurm_plugins.client.job.JobRequest`), so nothing in the script can add one.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from jobspec.errors import SpecError
from jobspec.model import Mount, Spec
from jobspec.options import ClusterConfig
from jobspec.topologies import layout
from slurm_plugins.client.job import JobRequest, JobRequestError


class Shell(str):
    """Shell text produced by our own code (already quoted); ``finalize`` leaves it alone."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Rendered:
    """``request``: the job (one component per role of a heterogeneous job); ``script``: the
    batch script."""

    request: JobRequest
    script: str

    @property
    def argv(self) -> tuple[str, ...]:
        """The request as sbatch options (components separated by ``:``)."""
        return self.request.to_argv()

    def command_line(self) -> str:
        """The sbatch call as one would type it (for ``--dry-run``)."""
        return self.request.command_line()


def render(
    spec: Spec,
    cfg: ClusterConfig | None = None,
    *,
    dependencies: Mapping[str, int | str] | None = None,
) -> Rendered:
    """Render ``spec``; ``dependencies`` maps names of specs it waits for to their job ids."""
    cfg = cfg or ClusterConfig()
    deps = dependencies or {}
    missing = [n for n in spec.spec_dependencies if n not in deps]
    if missing:
        raise SpecError.at(
            "dependencies", f"no job id for {', '.join(missing)} (submit those specs together)"
        )
    try:
        lay = layout(spec, cfg, deps)
    except JobRequestError as exc:  # a value the schema let through that Slurm cannot take
        raise SpecError.at("", str(exc)) from None
    script = (
        _env()
        .get_template(lay.template)
        .render(
            spec=spec,
            cfg=cfg,
            kind=spec.topology.kind.value,
            mounts=resolve_mounts(spec.mounts, cfg),
            **lay.context,
        )
    )
    return Rendered(lay.request, script)


def resolve_mounts(mounts: Iterable[Mount], cfg: ClusterConfig) -> list[Mount]:
    """Relative mount paths are under the cluster's data or model root."""
    out = []
    for m in mounts:
        root = cfg.data_root if m.kind.value == "data" else cfg.model_root
        absolute = m.path.startswith("/")
        out.append(m if absolute else replace(m, path=f"{root.rstrip('/')}/{m.path}"))
    return out


# --------------------------------------------------------------------- Jinja
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _finalize(value: Any) -> str:
    if isinstance(value, Shell):
        return value
    if value is None or isinstance(value, bool):
        # A template bug, not user input: None/True would quote to a surprising word.
        raise TypeError(f"refusing to render {value!r} into a script")
    return shlex.quote(str(value))


def _words(values: Iterable[Any]) -> Shell:
    return Shell(" ".join(shlex.quote(str(v)) for v in values))


def _ident(value: Any) -> Shell:
    text = str(value)
    if not _IDENT.fullmatch(text):
        raise ValueError(f"not a shell identifier: {text!r}")
    return Shell(text)


@cache
def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("jobspec", "templates"),
        undefined=StrictUndefined,
        finalize=_finalize,
        autoescape=False,  # noqa: S701 - a shell script, not HTML: finalize quotes values
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        # bash uses "{#" in ${#array[@]}: keep Jinja comments out of its way
        comment_start_string="{##",
        comment_end_string="##}",
    )
    env.filters["words"] = _words
    env.filters["ident"] = _ident
    return env
