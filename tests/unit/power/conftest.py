"""Builders shared by the elastic-node tests."""

from __future__ import annotations

from typing import Any

from slurm_plugins.power.config import PowerConfig, parse_config


def power_config(**over: Any) -> PowerConfig:
    data: dict[str, Any] = {
        "nodes": "egpu[1-3],enpu1",
        "driver": {"kind": "command", "resume": ["on", "{node}"], "suspend": ["off", "{node}"]},
        "partitions": {"gpu": {"floor": 1, "ceiling": 2}},
        "idle_watts": 200,
        "node_watts": {"egpu1": 500},
    }
    data.update(over)
    return parse_config(data)
