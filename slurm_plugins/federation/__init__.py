"""AIPool's first scheduling level over several Slurm clusters: pick the cluster for a job.

``pick_cluster`` is a pure function of per-cluster snapshots (free capacity of the requested
kind, which accounts each cluster serves, data-locality labels) and a configurable policy;
``snapshot.take`` reads the snapshots through the Slurm client (``-M`` per cluster), and the
chosen cluster's own Slurm scheduler is the second level.
"""

from slurm_plugins.federation.model import (
    ClusterSnapshot,
    Decision,
    NoClusterFits,
    NodeFree,
    Request,
    request_for,
    request_of,
)
from slurm_plugins.federation.pick import pick_cluster
from slurm_plugins.federation.policy import FederationPolicy, PolicyError, load_policy

__all__ = [
    "ClusterSnapshot",
    "Decision",
    "FederationPolicy",
    "NoClusterFits",
    "NodeFree",
    "PolicyError",
    "Request",
    "load_policy",
    "pick_cluster",
    "request_for",
    "request_of",
]
