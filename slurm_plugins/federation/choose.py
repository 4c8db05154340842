"""The first level end to end: snapshot every cluster, pick one, hand back a client for it."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from slurm_plugins.client import SlurmClient
from slurm_plugins.federation import snapshot
from slurm_plugins.federation.model import Decision, Request
from slurm_plugins.federation.pick import pick_cluster
from slurm_plugins.federation.policy import FederationPolicy, load_policy

log = logging.getLogger("aipool.federation")
POLICY_ENV = "AIPOOL_FEDERATION_POLICY"


def policy_from_env(env: Mapping[str, str] | None = None) -> FederationPolicy:
    """The policy file named by ``AIPOOL_FEDERATION_POLICY``, or the defaults."""
    env = os.environ if env is None else env
    path = env.get(POLICY_ENV)
    return load_policy(Path(path) if path else None)


def choose(
    client: SlurmClient, req: Request, policy: FederationPolicy
) -> tuple[Decision, SlurmClient]:
    """Pick the cluster for ``req`` now; returns the decision and a client bound to it."""
    decision = pick_cluster(req, snapshot.take(client), policy)
    log.info("cluster %s for %s (%s)", decision.cluster, req.describe(), decision.explain())
    return decision, client.on(decision.cluster)
