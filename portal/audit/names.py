"""Names instead of ids in the audit log: ``project 4`` is shown as the project's name, and
so are the users, domains, roles, groups, datasets, models … that an event or its snapshots
name. The log keeps ids (it outlives what it names); an object deleted since is shown by the
last name the log itself recorded for it, marked as deleted and keeping its id.

Names are read in one query per kind of object for a whole page of events. The tables are
named here, not imported, so that the audit package depends on none of the packages whose
writes it records.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import column, select, table
from sqlalchemy.orm import Session

from portal.audit.models import AuditEvent
from portal.audit.words import SLURM_TARGETS, field_text, value_text
from portal.i18n import EMPTY, gettext
from portal.roles.texts import BUILTIN_NAMES

#: kind of object -> (table, id column, name column)
NAMED: dict[str, tuple[str, str, str]] = {
    "user": ("users", "id", "username"),
    "domain": ("domains", "id", "name"),
    "project": ("projects", "id", "name"),
    "group": ("user_groups", "id", "name"),
    "role": ("roles", "id", "name"),
    "api_token": ("api_tokens", "id", "name"),
    "dataset": ("datasets", "id", "name"),
    "model": ("registered_models", "id", "name"),
    "inference_service": ("inference_services", "id", "name"),
    "label_set": ("label_sets", "id", "name"),
    "label_task": ("label_tasks", "id", "name"),
    "label_item": ("label_items", "id", "path"),
    "price_plan": ("acct_price_plans", "id", "name"),
    "billing_account": ("acct_billing_accounts", "id", "tenant"),
    "job": ("job_records", "job_id", "name"),
}
#: a snapshot's field -> the kind of object its value is the id of
ID_FIELDS = {
    "user_id": "user",
    "project_id": "project",
    "domain_id": "domain",
    "role_id": "role",
    "group_id": "group",
    "task_id": "label_task",
    "dataset_id": "dataset",
    "model_id": "model",
}
_NAME_KEYS = ("name", "username", "tenant")  # where a snapshot holds its object's name
SHOWN_CHARS = 160  # a value longer than this is cut on the page (the CSV has it whole)


def _ids(values: Iterable[str]) -> list[int]:
    return [int(v) for v in values if v.isdigit() and int(v) < 2**63]


def _current(session: Session, kind: str, ids: Iterable[str]) -> dict[str, str]:
    name, id_col, name_col = NAMED[kind]
    numbers = _ids(ids)
    if not numbers:
        return {}
    t = table(name, column(id_col), column(name_col))
    rows = session.execute(select(t.c[id_col], t.c[name_col]).where(t.c[id_col].in_(numbers)))
    return {str(i): str(n) for i, n in rows}


def _recorded(session: Session, kind: str, ids: Iterable[str]) -> dict[str, str]:
    """The last name the log recorded for objects that no longer exist."""
    wanted = list(ids)
    if not wanted:
        return {}
    stmt = (
        select(AuditEvent.target_id, AuditEvent.before, AuditEvent.after)
        .where(AuditEvent.target_type == kind, AuditEvent.target_id.in_(wanted))
        .order_by(AuditEvent.id)
    )
    out: dict[str, str] = {}
    for target_id, before, after in session.execute(stmt):
        for snap in (before, after):
            for key in _NAME_KEYS:
                if isinstance(snap, dict) and isinstance(snap.get(key), str):
                    out[target_id] = snap[key]
    return out


@dataclass(frozen=True, slots=True)
class Change:
    field: str
    before: str
    after: str


class Names:
    """The names of everything a batch of events refers to."""

    def __init__(self, session: Session, events: Sequence[AuditEvent]) -> None:
        wanted: dict[str, set[str]] = defaultdict(set)
        for e in events:
            if e.target_type in NAMED and e.target_id:
                wanted[e.target_type].add(e.target_id)
            if e.domain_id is not None:
                wanted["domain"].add(str(e.domain_id))
            for snap in (e.before, e.after):
                for key, kind in ID_FIELDS.items():
                    value = (snap or {}).get(key)
                    if isinstance(value, int) and not isinstance(value, bool):
                        wanted[kind].add(str(value))
        self._names: dict[tuple[str, str], str] = {}
        self._deleted: set[tuple[str, str]] = set()
        for kind, ids in wanted.items():
            found = _current(session, kind, ids)
            gone = ids - set(found)
            recorded = _recorded(session, kind, gone)
            self._names |= {(kind, i): n for i, n in (found | recorded).items()}
            self._deleted |= {(kind, i) for i in gone}

    def of(self, kind: str, ident: object) -> str:
        """``kind``'s object ``ident`` by name; a deleted one marked so, with its id."""
        key = (kind, str(ident))
        name = self._names.get(key)
        if kind == "job":  # a job the portal did not submit has no record: not a deleted one
            return gettext("%(id)s (%(name)s)", id=ident, name=name) if name else str(ident)
        if kind == "role" and name in BUILTIN_NAMES:  # names are unique: a built-in role
            name = gettext(BUILTIN_NAMES[name])
        if key not in self._deleted:
            return name or str(ident)
        if name:
            return gettext("%(name)s (deleted, id %(id)s)", name=name, id=ident)
        return gettext("id %(id)s (deleted)", id=ident)

    def target(self, e: AuditEvent) -> str:
        """The object of an event, by name."""
        snap = e.after or e.before or {}
        if e.target_type == "membership" and "user_id" in snap:
            return gettext(
                "%(user)s in %(project)s",
                user=self.of("user", snap["user_id"]),
                project=self.of("project", snap.get("project_id", "")),
            )
        if e.target_type == "domain_admin" and "user_id" in snap:
            return gettext(
                "%(user)s of %(domain)s",
                user=self.of("user", snap["user_id"]),
                domain=self.of("domain", snap.get("domain_id", "")),
            )
        if e.target_type == "slurm" and e.target_id in SLURM_TARGETS:
            return gettext(SLURM_TARGETS[e.target_id])
        if e.target_type in NAMED and e.target_id:
            return self.of(e.target_type, e.target_id)
        return e.target_id or EMPTY

    def domain(self, e: AuditEvent) -> str:
        return self.of("domain", e.domain_id) if e.domain_id is not None else EMPTY

    def value(self, key: str, value: Any) -> str:
        """A snapshot's value as a person reads it: ids as names, yes and no, lists."""
        if key in ID_FIELDS and isinstance(value, int) and not isinstance(value, bool):
            return self.of(ID_FIELDS[key], value)
        if value is None:
            return EMPTY
        if isinstance(value, bool):
            return gettext("yes") if value else gettext("no")
        if isinstance(value, str) and (word := value_text(key, value)) is not None:
            return word
        if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
            return ", ".join(str(v) for v in value)
        if isinstance(value, dict | list):
            return json.dumps(value, ensure_ascii=False, sort_keys=True)
        return str(value)

    def changes(self, e: AuditEvent, *, cut: bool = True) -> list[Change]:
        """Each field the event's snapshots hold: before and after, unchanged ones left out
        where both are known."""
        before, after = e.before or {}, e.after or {}
        out = []
        for key in list(dict.fromkeys([*before, *after])):
            if key in before and key in after and before[key] == after[key]:
                continue
            old = self.value(key, before[key]) if key in before else ""
            new = self.value(key, after[key]) if key in after else ""
            if cut:
                old, new = _cut(old), _cut(new)
            out.append(Change(field_text(key), old, new))
        return out


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def ids_named(session: Session, kind: str, name: str) -> set[str]:
    """The ids (as the log stores them) of ``kind``'s objects called ``name``, now or when
    the log last named them; an id given as digits is taken as it is."""
    found = {name} if name.isdigit() else set()
    if kind not in NAMED:
        return found
    table_name, id_col, name_col = NAMED[kind]
    t = table(table_name, column(id_col), column(name_col))
    found |= {str(i) for i in session.scalars(select(t.c[id_col]).where(t.c[name_col] == name))}
    gone = select(AuditEvent.target_id, AuditEvent.before, AuditEvent.after).where(
        AuditEvent.target_type == kind, AuditEvent.action.endswith(".delete")
    )
    for target_id, before, after in session.execute(gone):
        for snap in (before, after):
            if isinstance(snap, dict) and name in (snap.get(k) for k in _NAME_KEYS):
                found.add(target_id)
    return found
