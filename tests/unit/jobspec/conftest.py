"""Builders for job-spec tests: a minimal valid spec, changed one field at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobspec.errors import SpecError
from jobspec.library import merge
from jobspec.model import Spec
from jobspec.schema import load_spec

DATA = Path(__file__).resolve().parents[2] / "data" / "jobspec"
MINIMAL: dict[str, Any] = {"name": "hello", "command": 'python3 -c "print(1)"'}


def spec_data(**fields: Any) -> dict[str, Any]:
    """The minimal spec with ``fields`` merged in (a value of None removes the field)."""
    data = merge(MINIMAL, fields)
    return {k: v for k, v in data.items() if v is not None}


def make(**fields: Any) -> Spec:
    return load_spec(spec_data(**fields))


def errors_of(data: Any) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_spec(data)
    return list(info.value.messages)
