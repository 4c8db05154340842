"""Slurm's node states in the reader's words (with Slurm's code small beside them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from flask import Flask

from portal.i18n import gettext
from slurm_plugins.client.models import Node, NodeState
from translations import N_

#: base state -> (label, what it means)
STATES: Mapping[str, tuple[str, str]] = {
    NodeState.IDLE: (N_("Idle"), N_("Up, with nothing running.")),
    NodeState.MIXED: (N_("Partly in use"), N_("Up; some of it runs jobs, the rest is free.")),
    NodeState.ALLOCATED: (N_("Fully in use"), N_("Up; all of it runs jobs.")),
    NodeState.DOWN: (N_("Down"), N_("Not available; Slurm starts nothing on it.")),
    NodeState.ERROR: (N_("Error"), N_("Slurm reports an error on it.")),
    NodeState.FUTURE: (N_("Not in service yet"), N_("Configured but not in service yet.")),
    NodeState.UNKNOWN: (N_("Unknown"), N_("Slurm reports a state that is not known here.")),
}
#: flags that change what a node does, strongest first -> (label, what it means)
FLAGS: tuple[tuple[str, tuple[str, str]], ...] = (
    ("NOT_RESPONDING", (N_("Not responding"), N_("Its slurmd does not answer."))),
    ("FAIL", (N_("Failing"), N_("Marked as failing; no new jobs."))),
    ("MAINTENANCE", (N_("In maintenance"), N_("Reserved for maintenance; no new jobs."))),
    ("DRAIN", (N_("Drained"), N_("Takes no new jobs; running ones finish."))),
    ("DRAINED", (N_("Drained"), N_("Takes no new jobs; running ones finish."))),
    ("DRAINING", (N_("Draining"), N_("Takes no new jobs; running ones finish."))),
    ("RESERVED", (N_("Reserved"), N_("In an advance reservation."))),
    ("POWERED_DOWN", (N_("Powered down"), N_("Switched off to save power."))),
    ("POWERING_UP", (N_("Powering up"), N_("Being switched on."))),
    ("POWERING_DOWN", (N_("Powering down"), N_("Being switched off after its idle time."))),
    ("POWER_DOWN", (N_("To be powered down"), N_("Will be switched off once it is idle."))),
)


@dataclass(frozen=True, slots=True)
class NodeWords:
    code: str  # Slurm's own, e.g. MIXED+DRAIN
    label: str
    meaning: str
    available: bool


def node_state(node: Node) -> NodeWords:
    code = "+".join([node.state.value, *sorted(node.flags)])
    label, meaning = STATES.get(node.state, STATES[NodeState.UNKNOWN])
    for flag, said in FLAGS:
        if flag in node.flags:
            label, meaning = said
            break
    return NodeWords(code, gettext(label), gettext(meaning), node.available)


def state_label(code: str) -> str:
    """A base state's label (``IDLE`` -> Idle), for counts of nodes by state."""
    label, _ = STATES.get(code, STATES[NodeState.UNKNOWN])
    return gettext(label)


def install(app: Flask) -> None:
    app.add_template_global(node_state, "node_state")
    app.add_template_global(state_label, "node_state_label")
