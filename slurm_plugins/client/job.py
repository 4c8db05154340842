"""One neutral job: a :class:`JobRequest` of one or more :class:`Component` s.

A request has exactly two wire forms: sbatch options (:meth:`JobRequest.to_argv`, the
components separated by ``:``) and slurmrestd job properties (:meth:`JobRequest.to_rest`, for
one data-parser version at a time). Nobody else writes sbatch options or REST properties for a
job, so a new field is added here, once, with both its forms. A field one form cannot carry is
refused with :class:`JobRequestError` naming it, never dropped.

Several components make a heterogeneous job (PS/worker, master/worker …): Slurm starts them
all together or none. Per-component fields are where each part runs and what each of its nodes
gets; the job-wide fields (directory, output, environment, dependencies, mail, labels …) are
given once, with the first component, as sbatch wants them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from slurm_plugins.client import labels as label_codec
from slurm_plugins.client.errors import JobRequestError
from slurm_plugins.client.job_wire import HET_SEPARATOR, REST_FORMS, argv

DEPENDENCY_TYPES = frozenset({"after", "afterany", "afterok", "afternotok", "aftercorr"})
MAIL_TYPES = frozenset(
    {"NONE", "BEGIN", "END", "FAIL", "REQUEUE", "ALL", "INVALID_DEPEND", "STAGE_OUT"}
    | {"TIME_LIMIT", "TIME_LIMIT_90", "TIME_LIMIT_80", "TIME_LIMIT_50", "ARRAY_TASKS"}
)
_GRES_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
_GRES_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


class OpenMode(StrEnum):
    APPEND = "append"
    TRUNCATE = "truncate"


@dataclass(frozen=True, slots=True)
class Gres:
    """A typed GRES ask per node: ``gpu:a100:2``, ``shard:8``, ``npu:910b:1``."""

    name: str
    count: int
    type: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _GRES_NAME.fullmatch(self.name):
            raise JobRequestError("gres", f"{self.name!r} is not a GRES name (e.g. gpu, shard)")
        if self.type is not None and not _GRES_TYPE.fullmatch(str(self.type)):
            raise JobRequestError("gres", f"{self.type!r} is not a GRES type (e.g. a100, 910b)")
        _count("gres", self.count, minimum=1)

    def __str__(self) -> str:
        return ":".join([self.name, *([self.type] if self.type else []), str(self.count)])


@dataclass(frozen=True, slots=True)
class Dependency:
    """Start after ``job`` (an id; a dry run shows a placeholder such as ``<prep>``)."""

    type: str
    job: int | str

    def __post_init__(self) -> None:
        if self.type not in DEPENDENCY_TYPES:
            raise JobRequestError(
                "dependencies", f"{self.type!r} is not one of {', '.join(sorted(DEPENDENCY_TYPES))}"
            )
        if isinstance(self.job, bool) or not isinstance(self.job, int | str):
            raise JobRequestError("dependencies", f"{self.job!r} is not a job id")
        text = str(self.job)
        if not text or any(c in text for c in ",:") or not _word(text):
            raise JobRequestError("dependencies", f"{text!r} is not a job id")


@dataclass(frozen=True, slots=True)
class Switches:
    """Run the component's nodes under at most ``count`` leaf switches (``topology/tree``),
    waiting up to ``wait_s`` seconds for that before taking any nodes (``None``: Slurm's
    ``max_switch_wait``)."""

    count: int = 1
    wait_s: int | None = None

    def __post_init__(self) -> None:
        _count("switches", self.count, minimum=1)
        if self.wait_s is not None:
            _count("switches", self.wait_s, minimum=0)


@dataclass(frozen=True, slots=True)
class Component:
    """Where one part of a job runs and what each of its nodes gets; ``None`` leaves Slurm's
    default. ``memory_mb`` is per node, ``time_limit`` in minutes."""

    account: str | None = None
    partition: str | None = None
    qos: str | None = None
    time_limit: int | None = None
    nodes: int | None = None
    tasks: int | None = None
    tasks_per_node: int | None = None
    cpus_per_task: int | None = None
    memory_mb: int | None = None
    gres: tuple[Gres, ...] = ()
    constraint: str | None = None
    nodelist: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    switches: Switches | None = None

    def __post_init__(self) -> None:
        for name in ("account", "partition", "qos"):
            _word_field(name, getattr(self, name))
        if self.constraint is not None:
            _text_field("constraint", self.constraint)
        for name in ("time_limit", "nodes", "tasks", "tasks_per_node", "cpus_per_task"):
            if getattr(self, name) is not None:
                _count(name, getattr(self, name), minimum=1)
        if self.memory_mb is not None:
            _count("memory_mb", self.memory_mb, minimum=0)
        if not all(isinstance(g, Gres) for g in self.gres):
            raise JobRequestError("gres", "GRES asks are Gres values")
        for name in ("nodelist", "exclude"):
            for node in getattr(self, name):
                _word_field(name, node)
        if self.switches is not None and not isinstance(self.switches, Switches):
            raise JobRequestError("switches", "a Switches value")

    @property
    def node_count(self) -> int:
        return self.nodes or 1


@dataclass(frozen=True, slots=True)
class JobRequest:
    """A job as AIPool means it, before it is sbatch options or REST properties.

    ``environment``: ``None`` passes the submitter's environment on (sbatch's default; REST has
    none to pass), ``{}`` only Slurm's own variables, otherwise exactly these variables.
    ``labels`` become the ``aipool:`` comment (:mod:`slurm_plugins.client.labels`).
    """

    components: tuple[Component, ...]
    name: str | None = None
    workdir: str | None = None
    output: str | None = None
    open_mode: OpenMode | None = None
    environment: Mapping[str, str] | None = field(default=None, hash=False)
    requeue: bool | None = None
    dependencies: tuple[Dependency, ...] = ()
    kill_on_invalid_dep: bool | None = None
    mail_user: str | None = None
    mail_type: tuple[str, ...] = ()
    begin: str | None = None
    hold: bool = False
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if not self.components or not all(isinstance(c, Component) for c in self.components):
            raise JobRequestError("components", "a job has one or more components")
        for name in ("name", "workdir", "output"):
            if getattr(self, name) is not None:
                _text_field(name, getattr(self, name))
        for name in ("mail_user", "begin"):
            _word_field(name, getattr(self, name))
        if self.open_mode is not None and self.open_mode not in set(OpenMode):
            raise JobRequestError("open_mode", "append or truncate")
        for name in ("requeue", "kill_on_invalid_dep"):
            if getattr(self, name) not in (None, True, False):
                raise JobRequestError(name, "true, false or unset")
        if not all(isinstance(d, Dependency) for d in self.dependencies):
            raise JobRequestError("dependencies", "dependencies are Dependency values")
        for event in self.mail_type:
            if event not in MAIL_TYPES:
                raise JobRequestError("mail_type", f"{event!r} is not a Slurm mail type")
        if self.mail_type and not self.mail_user:
            raise JobRequestError("mail_type", "mail events need a mail_user")
        for key, value in (self.environment or {}).items():
            if not isinstance(key, str) or not _ENV_NAME.fullmatch(key):
                raise JobRequestError("environment", f"{key!r} is not a variable name")
            if not isinstance(value, str) or "\x00" in value:
                raise JobRequestError("environment", f"the value of {key} is not text")
        try:
            label_codec.encode(self.labels)
        except label_codec.LabelError as exc:
            raise JobRequestError("labels", str(exc)) from None

    # ------------------------------------------------------------------ derived
    @property
    def heterogeneous(self) -> bool:
        return len(self.components) > 1

    def gres_totals(self) -> dict[str, int]:
        """GRES asked for in all, by name (``{"gpu": 4}``): per node times nodes, summed."""
        out: dict[str, int] = {}
        for c in self.components:
            for g in c.gres:
                out[g.name] = out.get(g.name, 0) + g.count * c.node_count
        return out

    def with_components(self, **changes: Any) -> JobRequest:
        """The same request with ``changes`` made to every component (e.g. ``account=…``)."""
        return replace(self, components=tuple(replace(c, **changes) for c in self.components))

    @property
    def comment(self) -> str | None:
        return label_codec.encode(self.labels) if self.labels else None

    @property
    def dependency(self) -> str | None:
        """``afterok:12:13,afterany:14``: ids grouped by type, in the order first given."""
        by_type: dict[str, list[str]] = {}
        for d in self.dependencies:
            by_type.setdefault(d.type, []).append(str(d.job))
        return ",".join(":".join([t, *ids]) for t, ids in by_type.items()) or None

    # ------------------------------------------------------------------ wire forms
    def to_argv(self) -> tuple[str, ...]:
        """sbatch options; components separated by ``:``, the job-wide ones with the first."""
        return argv(self)

    def command_line(self) -> str:
        """The sbatch call that submits the request, as one would type it, the script on
        stdin (what a dry run prints)."""
        return shlex.join(["sbatch", "--parsable", *self.to_argv()]) + " < script"

    def to_rest(self, version: str = "v0.0.38") -> dict[str, Any]:
        """The ``job`` (one component) or ``jobs`` (heterogeneous) member of slurmrestd's
        ``/job/submit`` body for data-parser ``version``; the script is the caller's."""
        form: Callable[[JobRequest], dict[str, Any]] | None = REST_FORMS.get(version)
        if form is None:
            raise ValueError(
                f"slurmrestd {version} is not supported; known: {', '.join(sorted(REST_FORMS))}"
            )
        return form(self)


__all__ = [
    "HET_SEPARATOR",
    "Component",
    "Dependency",
    "Gres",
    "JobRequest",
    "JobRequestError",
    "OpenMode",
    "Switches",
]


def _count(name: str, value: object, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise JobRequestError(name, f"a whole number of at least {minimum}, not {value!r}")


def _word(text: str) -> bool:
    return text.isprintable() and not any(c.isspace() for c in text)


def _word_field(name: str, value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value or not _word(value)):
        raise JobRequestError(name, f"{value!r} must be one word of printable text")


def _text_field(name: str, value: object) -> None:
    if not isinstance(value, str) or not value or not value.isprintable():
        raise JobRequestError(name, f"{value!r} must be one line of printable text")
