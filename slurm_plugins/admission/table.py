"""Policy -> the plain table the hook looks things up in -> Lua source for ``return {…}``.

Pure: no I/O. Python does every computation the hook would otherwise repeat per submission
(sets for membership, routes per device kind, the texts of messages), so the Lua side is a
handful of table lookups. Every string goes through :func:`lua_string`, which leaves only
printable ASCII unescaped: a hostile name cannot end the string, start a comment or smuggle
a line break into the file.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from slurm_plugins.admission.config import Kind, PolicyConfig, PriorityClass, Tenant, User
from slurm_plugins.client.versions import Release, shards_across_cards

#: Bumped when the hook and the table stop understanding each other.
FORMAT = 1

LuaValue = str | int | float | bool | Mapping[str, Any] | Sequence[Any]

# devices a job can be routed by (CPU jobs keep Slurm's)
_KIND_ORDER = (Kind.NPU, Kind.GPU, Kind.ACCEL)


def build_table(
    cfg: PolicyConfig,
    *,
    pass_through: bool = False,
    profile: int | None = None,
    release: Release | None = None,
) -> dict[str, Any]:
    """The table the hook reads. ``pass_through`` makes the hook accept every job unchanged
    (same load path, no checks): the baseline of the overhead benchmark. ``profile`` makes
    it log its mean and longest time every ``profile`` submissions. ``release`` is the Slurm
    the hook runs in, for what the policy leaves to it (shards across cards); unknown, the
    hook allows only what every release does."""
    across = cfg.cluster.shards_across_cards
    if across is None:
        across = release is not None and shards_across_cards(release)
    body: dict[str, Any] = {
        "format": FORMAT,
        "pass_through": pass_through,
        "default_partition": cfg.cluster.default_partition,
        "shards_per_gpu": cfg.cluster.shards_per_gpu,
        "shards_across_cards": across,
        "gres_kind": {name: kind.value for name, kind in cfg.cluster.gres.items()},
        "fractions": dict(cfg.cluster.fractions),
        "partitions": {
            part: {"pool": p.name, "kind": p.kind.value} for p in cfg.pools for part in p.partitions
        },
        "class_qos": {c.value: c.qos for c in PriorityClass},
        "qos_class": {**{c.qos: c.value for c in PriorityClass}, "medium": "medium"},
        "accounts": {t.account: t.name for t in cfg.tenants},
        "tenants": {t.name: _tenant(cfg, t) for t in cfg.tenants},
        "users": {u.name: _user(u) for u in cfg.users},
    }
    placement = _placement(cfg)
    if placement:
        body["placement"] = placement
    if profile is not None:
        if profile < 1:
            raise ValueError("profile: log every N >= 1 submissions")
        body["profile"] = profile
    body["digest"] = digest(body)
    return body


def _placement(cfg: PolicyConfig) -> dict[str, Any]:
    """What the hook needs to let the policy daemon place jobs first: its heartbeat file
    (beside the table), how old it may be, how long a job waits, and which partitions' jobs
    (those holding GPUs or NPUs: CPU work there strands cards too; the daemon does not place
    MLU, DCU or XPU cards)."""
    pl = cfg.cluster.placement
    if pl is None:
        return {}
    placed = (Kind.GPU, Kind.NPU)
    parts = [part for p in cfg.pools if p.kind in placed for part in p.partitions]
    return {
        "heartbeat": pl.heartbeat,
        "lapse": pl.lapse_s,
        "defer": pl.defer_s,
        "partitions": dict.fromkeys(parts, True),
    }


def digest(body: Mapping[str, Any]) -> str:
    """Short content hash: tags name the policy that admitted a job."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def _tenant(cfg: PolicyConfig, t: Tenant) -> dict[str, Any]:
    granted = [p for p in cfg.pools if p.name in t.pools]
    usable = granted + [p for p in cfg.pools if p.shared and p not in granted]
    route = {}
    for kind in _KIND_ORDER:  # dedicated pools first, then shared ones, in file order
        first = next((p for p in usable if p.kind is kind), None)
        if first is not None:
            route[kind.value] = first.partitions[0]
    out: dict[str, Any] = {
        "domain": t.domain,
        "account": t.account,
        "pools": {p.name: True for p in usable},
        "partitions_text": _words([part for p in usable for part in p.partitions]) or "none",
        "route": route,
        "classes": {c.value: True for c in t.classes},
        "qos_text": _qos_words(t.classes),
        "default_class": t.default_class.value,
    }
    if t.shard_sizes is not None:
        out["shard_sizes"] = {str(n): True for n in t.shard_sizes}
        out["shard_text"] = _words([str(n) for n in t.shard_sizes], last="or")
    lim = t.limits
    for key, value in (
        ("max_gpus", lim.gpus),
        ("max_npus", lim.npus),
        ("max_time", lim.time_min),
        ("default_time", lim.default_time_min),
    ):
        if value is not None:
            out[key] = value
    return out


def _user(u: User) -> dict[str, Any]:
    if u.unrestricted:
        return {"unrestricted": True}
    out: dict[str, Any] = {}
    if u.tenant is not None:
        out["tenant"] = u.tenant
    if u.classes is not None:
        out["classes"] = {c.value: True for c in u.classes}
        out["qos_text"] = _qos_words(u.classes)
    return out


def _qos_words(classes: Sequence[PriorityClass]) -> str:
    return _words([f"--qos={c.qos}" for c in classes], last="or")


def _words(items: Sequence[str], last: str = "and") -> str:
    items = list(dict.fromkeys(items))
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {last} {items[-1]}"


# ---------------------------------------------------------------------------- Lua source
def lua_string(text: str) -> str:
    """``text`` as a double-quoted Lua 5.1 string literal that reads back byte for byte.

    Printable ASCII stays as it is (but ``"`` and ``\\``); every other byte of the UTF-8
    encoding becomes a three-digit decimal escape (``\\010``), which Lua 5.1 reads back
    exactly and which a following digit cannot extend.
    """
    out = ['"']
    for byte in text.encode("utf-8", errors="surrogatepass"):
        ch = chr(byte)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03d}")
    out.append('"')
    return "".join(out)


def to_lua(value: LuaValue, indent: int = 0) -> str:
    """A Python value (str, int, float, bool, mapping, sequence) as a Lua expression.

    Mapping keys are always written ``["key"] =`` and sorted, so the output is deterministic.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot write {value!r} to a Lua table")
        return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)
    if isinstance(value, str):
        return lua_string(value)
    pad, inner = "  " * indent, "  " * (indent + 1)
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        items = []
        for key in sorted(value, key=str):
            if not isinstance(key, str):
                raise TypeError(f"table keys must be strings, not {type(key).__name__}")
            items.append(f"{inner}[{lua_string(key)}] = {to_lua(value[key], indent + 1)},")
        return "{\n" + "\n".join(items) + f"\n{pad}}}"
    if isinstance(value, Sequence):
        return "{" + ", ".join(to_lua(v, indent + 1) for v in value) + "}"
    raise TypeError(f"cannot write a {type(value).__name__} to a Lua table")


def table_source(table: Mapping[str, Any], header: Iterable[str] = ()) -> str:
    """The file the hook ``dofile``s: comments, then ``return {…}``."""
    lines = []
    for line in header:
        if any(not 0x20 <= ord(ch) < 0x7F for ch in line):
            raise ValueError(f"header lines must be printable ASCII: {line!r}")
        lines.append(f"-- {line}")
    return "\n".join([*lines, "return " + to_lua(table), ""])
