"""Slurm's words where the tenancy pages show them, explained in the reader's language: a
project's QOS list (the priority classes its members may use) and what an account is."""

from __future__ import annotations

from portal.i18n import gettext
from translations import N_

#: What each of the site's QOS means to a member (the lab's and the Ansible roles' QOS:
#: higher priority preempts lower, and a preempted job goes back to the queue).
QOS_MEANING = {
    "high": N_("High priority: may preempt normal and low jobs"),
    "normal": N_("Normal priority: may preempt low jobs"),
    "low": N_("Low priority: may be preempted and put back in the queue"),
}


def qos_words(name: str) -> str:
    """One QOS in words, its Slurm name kept for those who use ``sbatch --qos``."""
    meaning = QOS_MEANING.get(name)
    if meaning is None:
        return gettext("QOS %(name)s", name=name)
    return gettext("%(meaning)s (QOS %(name)s)", meaning=gettext(meaning), name=name)


def qos_list_words(value: str | tuple[str, ...]) -> list[tuple[str, bool]]:
    """A project's QOS list in words, each with whether it is the default (the first)."""
    names = [q.strip() for q in value.split(",")] if isinstance(value, str) else list(value)
    names = [q for q in names if q]
    return [(qos_words(q), i == 0) for i, q in enumerate(names)]
