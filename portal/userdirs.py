"""Per-user directories for what the portal runs: job outputs, evaluations, fine-tuning,
inference replicas, Jupyter sessions.

Each user's files lie under ``<root>/<user>``, a directory of theirs (mode 2750) whose group is
the portal's service group: the job, running as the user, writes there; the portal reads the
outputs through the group (new files inherit it, the setgid bit); nobody else may enter. A
directory of one run (``<root>/<user>/<random>``) is the same. Nothing the portal makes for
users is world-writable or world-readable.

Only root may give a directory to another user. A portal running as root does it here; one
that is not leaves it to whoever prepared the directories (the lab, the Ansible role) and
refuses a directory that is missing or not the user's.
"""

from __future__ import annotations

import grp
import os
import pwd
import secrets
import stat
from pathlib import Path

from portal.errors import Conflict

MODE = 0o2750  # the user's; the portal's group reads; others nothing; new files keep the group


def service_group(name: str) -> int | None:
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


def _give(path: Path, username: str, group: str) -> None:
    entry = pwd.getpwnam(username)
    gid = service_group(group)
    os.chown(path, entry.pw_uid, entry.pw_gid if gid is None else gid, follow_symlinks=False)
    path.chmod(MODE if gid is not None else 0o700)


def _check(path: Path, username: str) -> None:
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode):
        raise Conflict(f"the directory of {username}'s jobs is not a directory")
    if os.geteuid() == 0 and st.st_uid != pwd.getpwnam(username).pw_uid:
        raise Conflict(f"the directory of {username}'s jobs belongs to someone else")
    if st.st_mode & 0o007:
        raise Conflict(f"the directory of {username}'s jobs is open to other users")


def user_dir(root: Path, username: str, group: str) -> Path:
    """``<root>/<username>``, made the user's on first use."""
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(username)
        except KeyError:
            raise Conflict(f"{username} has no Unix account here: jobs run as the user") from None
    root.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        root.chmod(0o711)  # users reach their own directory by name and list nobody's
    path = root / username
    if not path.exists() and not path.is_symlink():
        path.mkdir(mode=0o700)
        if os.geteuid() == 0:
            _give(path, username, group)
    _check(path, username)
    return path


def run_dir(root: Path, username: str, group: str) -> Path:
    """A new directory for one run of ``username``'s, under their own (random name)."""
    path = user_dir(root, username, group) / secrets.token_hex(16)  # a word jobspec accepts
    path.mkdir(mode=0o700)
    if os.geteuid() == 0:
        _give(path, username, group)
    return path
