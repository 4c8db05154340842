"""Helpers that read either JSON shape (22.05 plain values, 23.02+ wrapped ones)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import msgspec

from slurm_plugins.client.errors import ParseError, ReportedError
from slurm_plugins.client.models import (
    Tres,
)

Doc = Mapping[str, Any]


# ---------------------------------------------------------------------- shapes
def load(text: str | bytes | Doc, key: str) -> list[Doc]:
    """Parse a document and return its ``key`` list; Slurm errors in it become ParseError."""
    if isinstance(text, Mapping):
        doc: Any = text
    else:
        try:
            doc = json.loads(_without_cluster_banner(text))
        except ValueError as exc:
            raise ParseError(f"not JSON: {exc}") from exc
    if not isinstance(doc, Mapping):
        raise ParseError("expected a JSON object at the top level")
    return checked(doc.get("errors"), doc.get(key), key, sorted(doc))


def _without_cluster_banner(text: str | bytes) -> str | bytes:
    """23.02+ ``squeue``/``sinfo`` given ``-M name`` print ``CLUSTER: name`` above the JSON."""
    if isinstance(text, bytes):
        return text.partition(b"\n")[2] if text.startswith(b"CLUSTER: ") else text
    return text.partition("\n")[2] if text.startswith("CLUSTER: ") else text


def checked(errors: Any, items: Any, key: str, keys: Iterable[str] = ()) -> list[Any]:
    """A document's ``key`` list, once its ``errors`` are known to be none.

    An empty list next to errors means "could not ask", not "nothing there".
    """
    real = [e for e in errors or () if isinstance(e, Mapping) and not _empty(e)]
    if real:
        msg = "; ".join(str(e.get("description") or e.get("error") or e) for e in real)
        raise ReportedError(f"Slurm reported errors: {msg}")
    if items is None:
        raise ParseError(f"no {key!r} in Slurm's output (keys: {list(keys)})")
    if not isinstance(items, list):
        raise ParseError(f"{key!r} is not a list")
    return items


def _empty(error: Mapping[str, Any]) -> bool:
    """sacct reports an empty result as an error ("Nothing found", 9003): it is not one."""
    return num(error.get("error_number")) == NOTHING_FOUND or error.get("description") == (
        "Nothing found"
    )


NOTHING_FOUND = 9003  # ESLURM_... "Nothing found with query" (slurmdb)


def num(value: Any) -> int | None:
    """``5``, ``"5"`` or ``{"set": true, "infinite": false, "number": 5}`` -> 5; unset -> None."""
    if value.__class__ is int:  # the common cases first (bool is not int here)
        return value
    if value is None:
        return None
    if isinstance(value, dict | Mapping):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def num0(value: Any) -> int:
    return num(value) or 0


def when(value: Any) -> datetime | None:
    """Epoch seconds (either shape) -> aware UTC datetime; 0 / unset -> None."""
    seconds = num(value)
    if not seconds or seconds <= 0:
        return None
    return datetime.fromtimestamp(seconds, tz=UTC)


def states(value: Any) -> list[str]:
    """``"PENDING"`` or ``["PENDING", "REQUEUED"]`` -> upper-case list."""
    if isinstance(value, str):
        return [value.upper()] if value else []
    if isinstance(value, list):
        return [str(v).upper() for v in value]
    return []


#: The job flags that name a job's state before its base state, in the order of Slurm's
#: ``job_state_string``: 22.05 prints that one word, 23.02+ lists the base state and its flags.
#: Flags the client has no state for (``REQUEUE_HOLD``, ``STAGE_OUT`` …) leave the base state.
_JOB_FLAG_STATES = ("COMPLETING", "CONFIGURING", "RESIZING", "REQUEUED", "SPECIAL_EXIT", "REVOKED")


def job_state(value: Any) -> str:
    """A job's state as one word on every release: 24.11's ``["RUNNING", "CONFIGURING"]``
    (a job whose nodes are still booting or powering up) reads ``CONFIGURING``, as 22.05's
    ``"CONFIGURING"`` does, and ``["COMPLETED", "COMPLETING"]`` reads ``COMPLETING``."""
    listed = states(value)
    flags = set(listed[1:])
    return next((f for f in _JOB_FLAG_STATES if f in flags), listed[0] if listed else "")


def text(value: Any) -> str:
    if value.__class__ is str:
        return value
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def word_list(value: Any) -> tuple[str, ...]:
    """Comma-separated string or list -> tuple of non-empty words."""
    if isinstance(value, list):
        return tuple(str(v) for v in value if v)
    return tuple(w for w in text(value).split(",") if w)


class TresItem(msgspec.Struct, gc=False):
    """One entry of a TRES list, as the typed decoders read it (any other key is skipped)."""

    type: Any = ""
    name: Any = None
    count: Any = None


def tres_list(items: Any) -> Tres:
    """sacct's ``[{"type": "gres", "name": "gpu:a100", "count": 2}, …]`` -> Tres."""
    counts: dict[str, int] = {}
    for item in items or ():
        if item.__class__ is TresItem:  # the typed decoders' entries: read without lookups
            kind, name, count = item.type or "", item.name, item.count
        else:
            kind, name, count = item.get("type", ""), item.get("name"), item.get("count")
        if kind == "mem" or not name:
            counts[kind] = num0(count)
        else:
            counts[f"{kind}/{name}"] = num0(count)
    return Tres(counts)


def exit_code(value: Any) -> int | None:
    """The process's exit code, shell-style (128 + signal when killed by one).

    squeue 22.05 prints the raw wait status (``768`` for ``exit 3``, ``15`` for SIGTERM);
    sacct and 23.02+ print ``{"status": …, "return_code": …}`` with the code itself.
    """
    if isinstance(value, Mapping):
        return num(value.get("return_code"))
    if isinstance(value, str) and ":" in value:
        return num(value.split(":", 1)[0])
    status = num(value)
    if status is None:
        return None
    signal = status & 0x7F
    return 128 + signal if signal else (status >> 8) & 0xFF


def ids(values: Iterable[Any]) -> list[int]:
    return [v for v in (num(x) for x in values) if v is not None]


def limit_minutes(value: Any) -> int | None:
    n = num(value)
    # 22.05 prints INFINITE as NO_VAL-ish sentinels
    if n is None or n >= 0xFFFFFFFE:
        return None
    return n
