"""Lint: the services touch files only where they may.

The portal and the accounting import act for tenants; whatever they do in a place a user can
write must be done by the user's own process (the as-the-user agent, ``portal.actas``) or by
the descriptor-walking reader (``portal.userfiles``). So a file operation — ``open``, a copy,
``chmod``/``chown``, ``unlink``/``rmtree``, a listing or walk, ``rename``, ``mkdir``, writing
a file — is allowed only in the modules named below, each with why: the services' own stores
and homes, which no user can write. A new module that needs one is added here in review,
with its reason; anything else fails the lint (``scripts/test.sh``, pre-commit).

    usage: python scripts/check_file_ops.py [PATH ...]   (default: the guarded packages)
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

GUARDED = ("portal", "accounting")

#: module (or package, ending in "/") -> why it may touch files
ALLOWED = {
    "portal/actas.py": "the as-the-user agent's client: streams only, through the root helper",
    "portal/userfiles.py": "reads users' files by descriptors, without following a link",
    "portal/userdirs.py": "the portal's own roots; users' directories through the root helper",
    "portal/app.py": "the portal's home and database file",
    "portal/control/lock.py": "the control daemon's lock file in the portal's home",
    "portal/storecheck.py": "lists the portal's own stores",
    "portal/quotas/policy.py": "the admission table in the portal's ADMISSION_DIR",
    "portal/datasets/storage.py": "the dataset store (the portal's): staging, versions",
    "portal/datasets/service.py": "a dataset's directory in the store, before its ACLs are set",
    "portal/datasets/unix.py": "ACLs and modes of the dataset store's directories",
    "portal/labelling/formats.py": "label exports written into the portal's staging",
    "portal/registry/storage.py": "the model store and its staging (the portal's)",
    "portal/registry/refresh.py": "evaluation images into the model store",
    "portal/registry/forms.py": "lists the site's model mirror (the portal's)",
    "portal/registry/workdirs.py": "names of a run's output files (contents via portal.userfiles)",
    "portal/presets/": "the preset programs: they run inside users' jobs, as the user",
    "portal/migrations/": "Alembic's own files",
    "accounting/cli.py": "reports written where the operator running it says",
    "accounting/energy.py": "reads the power event log of the site's configuration",
}

METHODS = {
    "chmod", "lchmod", "chown", "unlink", "rmdir", "rename", "mkdir", "symlink_to",
    "hardlink_to", "rglob", "glob", "iterdir", "write_text", "write_bytes", "touch",
}  # fmt: skip
MODULE_CALLS = {
    "os": {
        "open", "chmod", "chown", "lchown", "fchmod", "fchown", "unlink", "remove", "rmdir",
        "removedirs", "listdir", "scandir", "walk", "rename", "renames", "replace", "mkdir",
        "makedirs", "symlink", "link",
    },
    "shutil": {"copy", "copy2", "copyfile", "copytree", "rmtree", "move", "chown", "copymode"},
}  # fmt: skip


def file_ops(source: str) -> Iterator[tuple[int, str]]:
    """(line, what) for every file operation in a module's source."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        if isinstance(fn, ast.Name) and fn.id == "open":
            yield node.lineno, "open()"
        elif isinstance(fn, ast.Attribute):
            owner = fn.value.id if isinstance(fn.value, ast.Name) else None
            if owner in MODULE_CALLS:
                if fn.attr in MODULE_CALLS[owner]:
                    yield node.lineno, f"{owner}.{fn.attr}()"
            elif fn.attr in METHODS:
                yield node.lineno, f".{fn.attr}()"


def allowed(rel: str) -> bool:
    return any(rel == k or (k.endswith("/") and rel.startswith(k)) for k in ALLOWED)


def check(root: Path, packages: tuple[str, ...] = GUARDED) -> list[str]:
    """Every file operation outside the allowed modules, as ``path:line: what``."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if allowed(rel):
                continue
            for line, what in file_ops(path.read_text(encoding="utf-8")):
                found.append(f"{rel}:{line}: {what} outside the modules allowed to touch files")
    return found


def main(argv: list[str]) -> int:
    root = Path(__file__).resolve().parents[1]
    problems = check(root, tuple(argv) or GUARDED)
    for line in problems:
        print(line)
    if problems:
        print(
            "check_file_ops: a service touches files where a user may write only through "
            "portal.actas (as the user) or portal.userfiles (by descriptors); if this module "
            "works on the services' own files only, add it to ALLOWED in "
            "scripts/check_file_ops.py with its reason",
            file=sys.stderr,
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
