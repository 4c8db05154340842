"""API: cluster totals and nodes."""

from __future__ import annotations

from typing import Any

from portal.nodes.schemas import ClusterSchema, NodeSchema, node_data, usage_data
from portal.nodes.service import read_nodes, totals
from portal.pagination import PageParams, page_of_list
from portal.slurm import slurm
from portal.web import AuthedView, Blueprint

blp = Blueprint("nodes", __name__, url_prefix="/api/v1", description="Monitoring")


@blp.route("/cluster")
class Cluster(AuthedView):
    @blp.response(200, ClusterSchema)
    def get(self) -> dict[str, Any]:
        """GPUs, shards, NPUs, CPUs and memory: used and total."""
        nodes = read_nodes(slurm())
        return {"nodes": len(nodes), **{k: usage_data(u) for k, u in totals(nodes).items()}}


@blp.route("/nodes")
class Nodes(AuthedView):
    @blp.response(200, NodeSchema(many=True))
    @blp.paginate()
    def get(self, pagination_parameters: PageParams) -> list[dict[str, Any]]:
        nodes = page_of_list(read_nodes(slurm()), pagination_parameters)
        return [node_data(n) for n in nodes]
