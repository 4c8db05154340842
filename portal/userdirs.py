"""Per-user directories for what the portal runs: job outputs, evaluations, fine-tuning,
inference replicas, Jupyter sessions.

Each user's files lie under ``<root>/<user>``, a directory of theirs (mode 2750) whose group is
the portal's service group: the job, running as the user, writes there; the portal reads the
outputs through the group (new files inherit it, the setgid bit); nobody else may enter. A
directory of one run (``<root>/<user>/<random>``) is the same. Nothing the portal makes for
users is world-writable or world-readable.

A run's directory is the same (mode 2750): the portal reads through the group and writes
nothing there. What it puts in a run's directory (the job's copy of a model) the user's own
process writes, the as-the-user agent (``portal.actas``), from a stream the portal sends.

Only root may give a directory to another user. The portal does not run as root: it asks the
root helper (``aipool/roothelper.py``, through ``sudo -n``, the ``ROOT_HELPER`` setting) to
make and remove these directories, and nothing else. Without a helper it uses what whoever
prepared the directories left (the Ansible role) and refuses a directory that is missing or
not the user's. A process that is root (the unit tests) does the same itself.
"""

from __future__ import annotations

import grp
import os
import pwd
import secrets
import shlex
import shutil
import stat
import subprocess
from pathlib import Path

from flask import current_app, has_app_context

from portal.errors import Conflict

MODE = 0o2750  # the user's; the portal's group reads; others nothing; new files keep the group
RUN_MODE = 0o2750  # a run's: the same; the user's own process stages what the job reads


def service_group(name: str) -> int | None:
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


def _give(path: Path, username: str, group: str, mode: int = MODE) -> None:
    entry = pwd.getpwnam(username)
    gid = service_group(group)
    os.chown(path, entry.pw_uid, entry.pw_gid if gid is None else gid, follow_symlinks=False)
    path.chmod(mode if gid is not None else 0o700)


def helper() -> list[str]:
    """The root helper's command (``ROOT_HELPER``: a list or a shell-quoted string), or []."""
    configured = current_app.config.get("ROOT_HELPER") if has_app_context() else None
    if not configured:
        return []
    return shlex.split(configured) if isinstance(configured, str) else [str(w) for w in configured]


def _ask(verb: str, *args: str) -> None:
    """One call of the root helper; its refusal becomes the caller's 409, in its words."""
    argv = [*helper(), verb, *args]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Conflict(f"the root helper did not answer: {exc}") from None
    if done.returncode != 0:
        said = done.stderr.strip().removeprefix("aipool-helper: ") or f"exit {done.returncode}"
        raise Conflict(f"the root helper refused to {verb.replace('-', ' ')}: {said}")


def _check(path: Path, username: str) -> None:
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode):
        raise Conflict(f"the directory of {username}'s jobs is not a directory")
    if (os.geteuid() == 0 or helper()) and st.st_uid != pwd.getpwnam(username).pw_uid:
        raise Conflict(f"the directory of {username}'s jobs belongs to someone else")
    if st.st_mode & 0o007:
        raise Conflict(f"the directory of {username}'s jobs is open to other users")


def user_root() -> Path:
    """Where users' job directories lie: ``USER_DIRS``, else the instance's ``users``."""
    configured = current_app.config["USER_DIRS"]
    return Path(configured) if configured else Path(current_app.instance_path) / "users"


def work_root() -> Path:
    """Where the model registry's run directories lie: ``MODEL_WORK``, else the instance's
    ``model-work`` (made on first use)."""
    configured = current_app.config["MODEL_WORK"]
    path = Path(configured) if configured else Path(current_app.instance_path) / "model-work"
    path.mkdir(parents=True, exist_ok=True)
    return path


def user_dir(root: Path, username: str, group: str) -> Path:
    """``<root>/<username>``, made the user's on first use."""
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(username)
        except KeyError:
            raise Conflict(f"{username} has no Unix account here: jobs run as the user") from None
    root.mkdir(parents=True, exist_ok=True)
    if root.stat().st_uid == os.geteuid():
        root.chmod(0o711)  # users reach their own directory by name and list nobody's
    path = root / username
    if not path.exists() and not path.is_symlink():
        if os.geteuid() == 0:
            path.mkdir(mode=0o700)
            _give(path, username, group)
        elif helper():
            _ask("user-dir", str(root), username)
        else:
            raise Conflict(
                f"{username} has no directory for jobs here and the portal may not make one "
                "(it is not root and has no ROOT_HELPER)"
            )
    _check(path, username)
    return path


def run_dir(root: Path, username: str, group: str) -> Path:
    """A new directory for one run of ``username``'s, under their own (random name)."""
    path = user_dir(root, username, group) / secrets.token_hex(16)  # a word jobspec accepts
    if os.geteuid() == 0:
        path.mkdir(mode=0o700)
        _give(path, username, group, RUN_MODE)
    elif helper():
        _ask("run-dir", str(root), username, path.name)
    else:
        try:
            path.mkdir(mode=0o700)  # in a directory prepared to be writable by the portal
        except PermissionError:
            raise Conflict(
                f"the portal may not make a directory for {username}'s run (it is not root "
                "and has no ROOT_HELPER)"
            ) from None
    return path


def remove_run(path: Path | str) -> None:
    """Remove one run's directory (``<root>/<user>/<name>``) with all its job wrote."""
    path = Path(path)
    if os.geteuid() != 0 and helper():
        _ask("remove-run", str(path.parent.parent), path.parent.name, path.name)
        return
    shutil.rmtree(path, ignore_errors=True)  # root (the tests' portals), or the portal's own


def remove_workspace(store: Path, dataset_id: int) -> None:
    """Remove a dataset's workspace (``<store>/<id>/workspace``) whole, whoever wrote in it:
    the portal removes what it may, the root helper (``remove-workspace``) the entries its
    writers' jobs kept for themselves. ``Conflict`` when it is still there."""
    path = store / str(dataset_id) / "workspace"
    if not path.exists() and not path.is_symlink():
        return
    shutil.rmtree(path, ignore_errors=True)  # by descriptors: never follows a link
    if (path.exists() or path.is_symlink()) and helper() and os.geteuid() != 0:
        _ask("remove-workspace", str(store), str(dataset_id))
    if path.exists() or path.is_symlink():
        raise Conflict(f"{path} could not be removed whole")
