"""marshmallow's nested error messages as ``a.b[0].c: message`` lines, for every config file
of the Slurm side (admission policy, policy daemon, lab tenants)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def flatten(messages: Any, path: str = "", *, root: str = "") -> list[str]:
    """One line per error, keys sorted; ``root`` names errors of the document itself."""
    if isinstance(messages, Mapping):
        out: list[str] = []
        for key in sorted(messages, key=str):
            if key in ("value", "_schema"):  # fields.Dict's values / schema-level errors
                sub = path
            elif key == "key":
                sub = f"{path} (name)"
            elif isinstance(key, int):
                sub = f"{path}[{key}]"
            else:
                sub = f"{path}.{key}" if path else str(key)
            out += flatten(messages[key], sub, root=root)
        return out
    if isinstance(messages, list | tuple):
        if all(isinstance(m, str) for m in messages):
            label = path or root
            return [f"{label}: {m}" if label else m for m in messages]
        return [line for m in messages for line in flatten(m, path, root=root)]
    label = path or root
    return [f"{label}: {messages}" if label else str(messages)]
