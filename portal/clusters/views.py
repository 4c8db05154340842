"""API: every cluster the portal's Slurm client sees (platform and domain admins)."""

from __future__ import annotations

from typing import Any

from portal.clusters.schemas import ClusterStatusSchema, cluster_data
from portal.clusters.service import read_clusters
from portal.slurm import slurm
from portal.web import AuthedView, Blueprint, current_access

blp = Blueprint("clusters", __name__, url_prefix="/api/v1", description="Clusters")


@blp.route("/clusters")
class Clusters(AuthedView):
    @blp.response(200, ClusterStatusSchema(many=True))
    def get(self) -> list[dict[str, Any]]:
        """Every cluster slurmdbd knows: whether it answers, nodes by state, free and total
        GPUs, shards, NPUs and CPUs, running and pending jobs."""
        return [cluster_data(c) for c in read_clusters(slurm(), current_access())]
