"""What the inference pages call a service's states, health and devices, in words."""

from __future__ import annotations

from portal.i18n import gettext
from translations import N_

STATE = {
    "running": N_("Running"),
    "stopped": N_("Stopped"),
    "expired": N_("Expired"),
    "deleting": N_("Being deleted"),
}
HEALTH = {
    **STATE,
    "ready": N_("Ready"),
    "starting": N_("Starting"),
    "failing": N_("Failing: its replicas keep stopping"),
}
DEVICE = {
    "cpu": N_("CPU only"),
    "fraction": N_("Part of a GPU (shards)"),
    "gpu": N_("Whole GPU cards"),
}
FIELD = {
    "texts": N_("Texts, one per line"),
    "text": N_("Text"),
    "prompt": N_("Prompt"),
    "question": N_("Question"),
    "context": N_("Context"),
    "pixels": N_("An image of a digit (shrunk to 8x8 grey pixels)"),
    "image": N_("Image"),
    "mask": N_("Mask image"),
}


def state(value: str) -> str:
    return gettext(STATE[value]) if value in STATE else value


def health(value: str) -> str:
    return gettext(HEALTH[value]) if value in HEALTH else value


def device(value: str) -> str:
    return gettext(DEVICE[value]) if value in DEVICE else value


def field(name: str) -> str:
    """A try-it field's label: the input schema's property in words."""
    return gettext(FIELD[name]) if name in FIELD else name
