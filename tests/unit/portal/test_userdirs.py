"""Users' job directories: each user's own (2750, the portal's group), one per run inside it
(2750 too), never open to other users; a directory someone else planted is refused."""

from __future__ import annotations

import grp
import os
import pwd
import stat
from pathlib import Path

import pytest

from portal import userdirs
from portal.errors import Conflict


def run_dirs(root: Path) -> list[Path]:
    """The run directories under a root of users' directories (``<root>/<user>/<run>``)."""
    return [run for user in root.iterdir() for run in user.iterdir()]


def _someone() -> tuple[str, str]:
    """A real user other than root, and a group for the portal, as the lab makes them."""
    for name in ("alice", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        for group in ("aipool", "nogroup", "daemon"):
            try:
                grp.getgrnam(group)
                return name, group
            except KeyError:
                continue
    pytest.fail("this machine has neither alice nor nobody")


def test_each_user_gets_their_own_closed_directory(tmp_path: Path) -> None:
    user, group = _someone()
    path = userdirs.user_dir(tmp_path / "users", user, group)
    assert path == tmp_path / "users" / user
    run = userdirs.run_dir(tmp_path / "users", user, group)
    assert run.parent == path
    for d in (path, run):
        st = d.stat()
        assert st.st_mode & 0o007 == 0, oct(st.st_mode)  # nothing for other users
        if os.geteuid() == 0:
            assert st.st_uid == pwd.getpwnam(user).pw_uid
            assert st.st_gid == grp.getgrnam(group).gr_gid
            # a run's directory: the portal's group also writes (the staged model)
            assert stat.S_IMODE(st.st_mode) == 0o2750
    if os.geteuid() == 0:
        assert stat.S_IMODE((tmp_path / "users").stat().st_mode) == 0o711  # no listing
    assert userdirs.run_dir(tmp_path / "users", user, group) != run  # a new one each time


def test_a_planted_or_open_directory_is_refused(tmp_path: Path) -> None:
    user, group = _someone()
    root = tmp_path / "users"
    root.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (root / user).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(Conflict, match="not a directory"):
        userdirs.user_dir(root, user, group)
    (root / user).unlink()
    (root / user).mkdir()
    (root / user).chmod(0o777)
    if os.geteuid() == 0:  # made by root, not given to the user: someone else's
        with pytest.raises(Conflict, match="someone else"):
            userdirs.user_dir(root, user, group)
        os.chown(root / user, pwd.getpwnam(user).pw_uid, -1)
    with pytest.raises(Conflict, match="open to other users"):
        userdirs.user_dir(root, user, group)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root checks Unix accounts")
def test_a_user_without_a_unix_account_gets_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(Conflict, match="no Unix account"):
        userdirs.user_dir(tmp_path, "no-such-user-here", "aipool")
