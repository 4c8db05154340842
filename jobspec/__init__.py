"""Declarative AI jobs: a validated spec, rendered safely to sbatch argv and a batch script."""

from jobspec.errors import JobSpecError, LibraryError, SpecError, SubmitError
from jobspec.files import load_spec_file, load_specs
from jobspec.model import Spec
from jobspec.options import ClusterConfig
from jobspec.render import Rendered, render
from jobspec.schema import load_spec

__all__ = [
    "ClusterConfig",
    "JobSpecError",
    "LibraryError",
    "Rendered",
    "Spec",
    "SpecError",
    "SubmitError",
    "load_spec",
    "load_spec_file",
    "load_specs",
    "render",
]
