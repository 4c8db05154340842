"""API: the pool's capacity (per partition too) and each node's, counted one way."""

from __future__ import annotations

import time
from typing import Any

from marshmallow import Schema, fields, validate

from portal import clock
from portal.nodes import energy, series
from portal.nodes.schemas import ClusterSchema, NodeSchema, capacity_data, node_data
from portal.nodes.service import pool_of, read_nodes
from portal.pagination import PageParams, page_of_list
from portal.slurm import slurm
from portal.web import AuthedView, Blueprint, session

blp = Blueprint("nodes", __name__, url_prefix="/api/v1", description="Monitoring")


@blp.route("/cluster")
class Cluster(AuthedView):
    @blp.response(200, ClusterSchema)
    def get(self) -> dict[str, Any]:
        """GPU and NPU cards (shards and vNPUs as their share of a card), shards, vNPUs, CPUs
        and memory: used, free and total, for the pool and each partition."""
        pool = pool_of(read_nodes(slurm()))
        return {
            **capacity_data(pool.total),
            "partitions": [
                {"name": name, **capacity_data(cap)} for name, cap in pool.partitions.items()
            ],
        }


@blp.route("/nodes")
class Nodes(AuthedView):
    @blp.response(200, NodeSchema(many=True))
    @blp.paginate()
    def get(self, pagination_parameters: PageParams) -> list[dict[str, Any]]:
        """Each node's state and capacity, counted as the pool's is."""
        rows = page_of_list(list(pool_of(read_nodes(slurm())).nodes), pagination_parameters)
        return [node_data(node, cap) for node, cap in rows]


class MonitoringQuerySchema(Schema):
    window = fields.String(
        load_default=series.DEFAULT_WINDOW,
        validate=validate.OneOf(list(series.WINDOWS)),
        metadata={"description": "how far back: 1h, 6h, 1d, 7d or 30d"},
    )
    cluster = fields.String(validate=validate.Length(max=64))


class MonitoringSeriesSchema(Schema):
    window = fields.String()
    start = fields.Float(metadata={"description": "Unix time of the first point"})
    end = fields.Float()
    step = fields.Integer(metadata={"description": "seconds per point"})
    t = fields.List(fields.Float(), metadata={"description": "each point's Unix time"})
    pool = fields.Dict(metadata={"description": "kind -> used, free, total (cards; CPUs)"})
    utilisation = fields.Dict(metadata={"description": "kind -> percent of the pool in use"})
    partitions = fields.Dict(
        metadata={"description": "partition -> kind -> pending, running, wait_mean_m, wait_max_m"}
    )
    nodes = fields.Dict(metadata={"description": "node -> kind -> percent of its cards in use"})


@blp.route("/monitoring/series")
class Series(AuthedView):
    @blp.arguments(MonitoringQuerySchema, location="query")
    @blp.response(200, MonitoringSeriesSchema)
    def get(self, args: dict[str, Any]) -> dict[str, Any]:
        """The pool's capacity and utilisation, the queue and waits per partition, and each
        node's utilisation over a window, from the control daemon's samples (one value per
        point; null where there was no sample)."""
        return series.read(session(), args["window"], clock.now(), cluster=args.get("cluster"))


class EnergyQuerySchema(Schema):
    window = fields.String(
        load_default=energy.DEFAULT_WINDOW,
        validate=validate.OneOf(list(energy.WINDOWS)),
        metadata={"description": "how far back: 1d, 7d or 30d"},
    )


class NodeEnergySchema(Schema):
    node = fields.String()
    hours_off = fields.Float(metadata={"description": "hours powered down in the window"})
    watts = fields.Float(metadata={"description": "its idle draw, which powering down saves"})
    kwh = fields.Float(metadata={"description": "energy saved: hours off x idle watts"})


class EnergySchema(Schema):
    configured = fields.Boolean(metadata={"description": "false: no elastic nodes here"})
    window = fields.String()
    start = fields.Float(metadata={"description": "Unix time the window starts"})
    end = fields.Float()
    hours_off = fields.Float()
    kwh = fields.Float()
    nodes = fields.List(fields.Nested(NodeEnergySchema))


@blp.route("/nodes/energy")
class Energy(AuthedView):
    @blp.arguments(EnergyQuerySchema, location="query")
    @blp.response(200, EnergySchema)
    def get(self, args: dict[str, Any]) -> dict[str, Any]:
        """Energy saved by elastic nodes: the hours each spent powered down in the window
        times its idle draw, from the power programs' event log."""
        report = energy.energy_report(args["window"], time.time())
        return {
            "configured": report.configured,
            "window": args["window"],
            "start": report.since,
            "end": report.until,
            "hours_off": report.hours,
            "kwh": report.kwh,
            "nodes": [
                {"node": n.node, "hours_off": n.hours, "watts": n.watts, "kwh": n.kwh}
                for n in report.nodes
            ],
        }
