"""Turn Slurm's ``--json`` output into the typed models, whatever the Slurm version.

Slurm 22.05 (openapi v0.0.38 data parser) prints plain numbers, ``"job_state": "PENDING"`` and
``"state": "idle"`` with separate ``state_flags``. Slurm 23.02+ (v0.0.39 … v0.0.42, 24.11 in
Debian 13) wraps numbers as ``{"set": true, "infinite": false, "number": 5}``, states as
lists of flags, and moves some fields (``exit_code``, ``time``, ``tres``) into objects. Each
helper below accepts both shapes, so callers never see the difference.
"""

from slurm_plugins.client.errors import ParseError
from slurm_plugins.client.parse.accounting import (
    acct_job,
    acct_jobs,
    acct_step,
    association,
    associations,
    qos,
    qos_one,
)
from slurm_plugins.client.parse.records import (
    gres_request,
    job,
    jobs,
    node,
    nodes,
    partition,
    partitions,
)
from slurm_plugins.client.parse.shapes import (
    Doc,
    exit_code,
    ids,
    load,
    num,
    num0,
    states,
    text,
    tres_list,
    when,
    word_list,
)
from slurm_plugins.client.parse.text import (
    ASSOC_FIELDS,
    QOS_FIELDS,
    associations_parsable,
    controllers_text,
    leaf_switches,
    partitions_text,
    qos_parsable,
    sdiag_counters,
)

__all__ = [
    "ASSOC_FIELDS",
    "QOS_FIELDS",
    "Doc",
    "ParseError",
    "acct_job",
    "acct_jobs",
    "acct_step",
    "association",
    "associations",
    "associations_parsable",
    "controllers_text",
    "exit_code",
    "gres_request",
    "ids",
    "job",
    "jobs",
    "leaf_switches",
    "load",
    "node",
    "nodes",
    "num",
    "num0",
    "partition",
    "partitions",
    "partitions_text",
    "qos",
    "qos_one",
    "qos_parsable",
    "sdiag_counters",
    "states",
    "text",
    "tres_list",
    "when",
    "word_list",
]
