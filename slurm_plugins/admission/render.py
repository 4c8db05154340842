"""Render the admission hook (``job_submit.lua``) and its policy table, and install them.

slurmctld re-reads ``job_submit.lua`` when its mtime grows and the hook re-reads the table
when the table file changes, so installing a new policy needs no restart. Files are replaced
atomically (temporary file + rename in the same directory): slurmctld never reads half a
file. Both reloads compare mtimes in whole seconds, so a replacement gets an mtime at least
one second past the file it replaces, even when two renders fall in the same second.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2

from slurm_plugins.admission.config import PolicyConfig
from slurm_plugins.admission.messages import catalogue
from slurm_plugins.admission.table import FORMAT, build_table, lua_string, table_source, to_lua
from slurm_plugins.client.versions import Release

HOOK_FILE = "job_submit.lua"
TABLE_FILE = "aipool_policy.lua"

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("slurm_plugins.admission", "templates"),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    autoescape=False,  # noqa: S701 - Lua source; every value goes through the lua filter
)
_ENV.filters["lua"] = lua_string
_ENV.filters["lua_value"] = to_lua


ADMISSION_SUBDIR = "admission"  # where a site lets the portal write the table (see below)


def render_hook(
    config: PolicyConfig,
    *,
    pass_through: bool = False,
    profile: int | None = None,
    table_dir: str = "",
    release: Release | None = None,
) -> dict[str, str]:
    """File name -> content: the policy table first, then the hook that reads it.

    ``table_dir`` (relative to the hook) puts the table in a directory of its own, e.g.
    ``admission``: a portal that does not run as root may write there, and not in Slurm's
    configuration directory. The hook loads the table as data only (no functions of Lua's
    at hand), so whoever may write the table cannot run code inside slurmctld. ``release``: the
    Slurm that runs the hook (:func:`build_table`)."""
    table = build_table(config, pass_through=pass_through, profile=profile, release=release)
    table_file = f"{table_dir}/{TABLE_FILE}" if table_dir else TABLE_FILE
    return {
        table_file: render_table(table),
        HOOK_FILE: _ENV.get_template("job_submit.lua.j2").render(
            table_file=table_file, format=FORMAT, messages=catalogue()
        ),
    }


def render_table(table: Mapping[str, Any]) -> str:
    header = [
        "AIPool admission policy table, read by job_submit.lua next to this file.",
        f"Rendered by `aipool policy render` (policy {table['digest']}); do not edit.",
    ]
    return table_source(table, header)


def write_files(files: Mapping[str, str], out_dir: Path, *, mode: int = 0o644) -> list[str]:
    """Install ``files`` into ``out_dir`` in order, atomically; returns the names that changed.

    Unchanged files are left alone (their mtime too), so installing twice reloads nothing.
    """
    changed = []
    for name, text in files.items():
        path = out_dir / name
        try:
            if path.read_text(encoding="utf-8") == text:
                continue
        except (OSError, UnicodeDecodeError):
            pass
        replace_atomically(path, text.encode("utf-8"), mode=mode)
        changed.append(name)
    return changed


def replace_atomically(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it over ``path``."""
    try:
        previous = int(path.stat().st_mtime)
    except FileNotFoundError:
        previous = None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        stamp = int(time.time())
        if previous is not None and stamp <= previous:
            stamp = previous + 1  # whole-second mtimes: the reload must see a newer file
        os.utime(tmp, (stamp, stamp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
