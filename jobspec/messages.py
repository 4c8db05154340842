"""What a job spec's errors say, as templates of the message catalogue: jobspec writes its
errors in English where it finds them (``resources.gpus: 1.3 cards: …``); whoever knows the
reader (the portal, ``aipool submit``) shows them in the reader's language with
:func:`in_words`. Each template mirrors one message jobspec writes, its values as ``{name}``
holes; ``tests/unit/jobspec/test_jobspec_messages.py`` checks that every error of the spec
tests has one.
"""

from __future__ import annotations

from functools import cache

from translations import N_, Sentences

#: marshmallow's own messages for the fields jobspec declares with it
LIBRARY = (
    N_("Missing data for required field."),
    N_("Field may not be null."),
    N_("Unknown field."),
    N_("Not a valid integer."),
    N_("Not a valid number."),
    N_("Not a valid string."),
    N_("Not a valid list."),
    N_("Not a valid mapping type."),
    N_("Not a valid boolean."),
    N_("Special numeric values (nan or infinity) are not permitted."),
    N_("Must be one of: {choices}."),
    N_("Must be greater than or equal to {min} and less than or equal to {max}."),
    N_("Must be greater than {min}."),
    N_("Must be greater than or equal to {min}."),
    N_("Longer than maximum length {max}."),
)

#: jobspec's own messages (the values that are sentences, the hints and kinds of value, are
#: marked where jobspec.fields and jobspec.schema name them)
TEMPLATES = (
    # texts and names
    N_("must be a string, not {kind}"),
    N_("must not be empty"),
    N_("must not contain newlines ({char})"),
    N_("must not contain control characters ({char})"),
    N_("must be valid Unicode text (found a lone surrogate)"),
    N_("is longer than {max} characters"),
    N_("{value} is not allowed: {hint}"),
    N_("{value} is not allowed: must be {what}; {hint}"),
    N_("{value} is not allowed: '..' is not allowed in paths"),
    N_("{value} is not allowed: no part of a path may start with '-'"),
    # environment and command
    N_(
        "{name} is not a valid variable name: use letters, digits and '_', not starting with a "
        "digit"
    ),
    N_("{name} is reserved: AIPool or Slurm sets it for the job"),
    N_("must be a mapping of variable names to strings, not {kind}"),
    N_("cannot be split into words: {why}"),
    N_("must be a string or a list of words, not {kind}"),
    N_("must name a program to run"),
    N_("has more than 1024 words"),
    # cards, memory, time
    N_("must be a number of cards or a fraction like 0.25 or '1/8'"),
    N_("must be a finite number"),
    N_("{value} is not a number of cards or a fraction like '1/8'"),
    N_("{value} divides by zero"),
    N_("must not be negative"),
    N_("at most {max} cards per node"),
    N_(
        "{value} cards: more than one card is a whole number of cards, or whole cards and a "
        "multiple of 1/{shards} of one more (e.g. {whole}.25)"
    ),
    N_("GPU fraction {value} is not a multiple of 1/{shards}; nearest valid sizes: {sizes}"),
    N_("GPU fraction {value} is outside (0, 1]; valid sizes are 1/{shards} to 1; nearest: {sizes}"),
    N_("must be a size like 16G or 512M"),
    N_("{value} is not a size like 16G, 512M or 1.5T"),
    N_("must be between 1M and 64T"),
    N_(
        "{value} is not a time limit like 90 (minutes), '30m', '2h', '1d', '1:30:00' or "
        "'1-12:00:00'"
    ),
    N_("must be between 1 minute and 365 days"),
    N_("must be a whole number"),
    N_("must be true or false"),
    N_("a job asks for GPUs or NPUs, not both"),
    N_("a job asks for one kind of card: {kinds}, not both"),
    N_("set {key} as well"),
    N_("a precision is for cards: set gpus or npus"),
    N_("a score is in TFLOPS at one precision: set precision as well"),
    N_("{value} is not in the compute catalogue"),
    N_(
        "no {kind} model here runs {precision} at {score} TFLOPS (models: {models}); see the "
        "compute catalogue"
    ),
    N_("no {kind} model here runs {precision} (models: {models})"),
    N_(
        "{gpus} cards: Slurm {release} gives one job's shards from one card only; ask for "
        "whole cards or a share of one card (shares above one card need Slurm 23.11 or later)"
    ),
    # topology
    N_("must be a mapping of role names to roles"),
    N_("only heterogeneous topologies have roles, not {kind}"),
    N_("unknown role(s) {unknown}; {kind} has {roles}"),
    N_("{kind} needs the role(s) {missing}"),
    N_("must be 1"),
    N_("at most {max} replicas in all"),
    N_("a Jupyter job is a single process"),
    N_("roles cannot share one node list; use affinity.exclude or a partition per role"),
    N_(
        "a {kind} job sets resources per role (topology.roles.<role>.resources); only time "
        "belongs here"
    ),
    N_("{kind} runs on one node; use ddp or mpi for several"),
    N_("single runs one process; use multi_gpu, ddp or mpi for more"),
    N_("multi_gpu starts one process per card: ask for whole gpus or npus"),
    N_(
        "same_switch keeps a job's nodes under one switch, but each role of this job runs on "
        "one node; ask for a role with more than one replica or leave same_switch out"
    ),
    N_(
        "same_switch keeps a job's nodes under one switch, but this job runs on one node; ask "
        "for resources.nodes of 2 or more or leave same_switch out"
    ),
    N_("a Jupyter job runs Jupyter; leave out command and script"),
    N_("give command or script, not both"),
    N_("missing: give command (a program and its arguments) or script (bash)"),
    N_(
        "missing: give command (or a command for every role) (a program and its arguments) "
        "or script (bash)"
    ),
    # restart, dependencies, affinity, conda, mounts
    N_("on_failure needs max_restarts of at least 1"),
    N_("on_failure requeues the job, so it cannot forbid requeueing"),
    N_("must map afterok/afterany/afternotok to job ids or spec names"),
    N_("unknown dependency type; use afterok, afterany or afternotok"),
    N_("name at least one event"),
    N_("job ids are positive"),
    N_("{value} is neither a job id nor a spec name"),
    N_("max_wait is how long same_switch may wait; set it"),
    N_("a spec must be a mapping, not {kind}"),
    N_("{value} is not a conda environment name or absolute path"),
    N_("clashes with mounts[{index}] ({name})"),
    N_("{name} is also the name of jobs[{index}]"),
    N_("a job cannot wait for itself"),
    N_("{name} is not a spec of this submission (use a job id for jobs submitted before)"),
    N_("cycle {cycle}"),
    N_("no job id for {names} (submit those specs together)"),
    N_("directory {path} does not exist"),
    N_("{path} does not exist"),
    # files, templates, the command
    N_("spec file is larger than {size} KiB"),
    N_("cannot read the spec: {why}"),
    N_("the file holds no spec"),
    N_("override {value}: write it as key.subkey=value"),
    N_("nothing to submit: give spec files, --template or --rerun"),
    N_("a template holds exactly one spec"),
)


@cache
def _sentences() -> Sentences:
    return Sentences((*LIBRARY, *TEMPLATES))


def in_words(message: str, locale: str | None) -> str:
    """One of a spec's error lines (``path: message``) in ``locale``; as it is when no
    template matches."""
    return _sentences().translate(message, locale)
