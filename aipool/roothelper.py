#!/usr/bin/python3 -I
"""aipool-helper: the only things AIPool's services need root for, and nothing else.

AIPool's services run as their own user (``aipool``); a job runs as its user. Giving a new
directory to a user is the one act that needs root, so the portal asks this helper, through
``sudo -n``, with one of three fixed argument lists::

    aipool-helper user-dir   ROOT USER         # ROOT/USER: USER's, mode 2750, the service group
    aipool-helper run-dir    ROOT USER NAME    # ROOT/USER/NAME: USER's, mode 2750, same group
    aipool-helper remove-run ROOT USER NAME    # ROOT/USER/NAME and all in it, gone
    aipool-helper remove-workspace ROOT ID     # ROOT/ID/workspace (a dataset's), gone
    aipool-helper as-user    USER TASK PATH    # the as-the-user agent, as USER (below)

ROOT must be one of the roots its configuration lists; USER an ordinary account (uid from
``min_uid`` to ``max_uid``, as the token service: Debian's ``slurm`` is 64030, ``nobody``
65534); NAME 32 hex digits. Every path is walked from ROOT by directory descriptors
without following a symbolic link, and a user's directory must be that user's, so a user who
plants a link or renames a directory gets a refusal, never root acting elsewhere. Each call,
done or refused, is appended to the audit log as one JSON line.

``as-user`` is how a service acts in a place a user can write: the helper checks USER (an
ordinary account), TASK (``pack``, ``pack-deref``, ``unpack`` or ``remove``:
:mod:`asuser.agent`) and PATH
(absolute, normalised, under one of the configured ``agent_roots``, where ``{user}`` stands for
USER's name), drops to USER (their groups, then gid, then uid; a fresh environment; ``/`` as
working directory; umask 027) and executes the configured ``agent`` command (the job runtime's
Python, ``-I -m asuser.agent``) with TASK and PATH. Standard input and output pass through:
data crosses as a tar stream that the receiver checks, never as a path the service opens.

The configuration is the file ``aipool-helper.json`` beside this script (root's, not
writable by others): ``{"roots": [...], "group": "aipool", "caller": "aipool", "min_uid":
1000, "audit": "/var/log/aipool/helper-audit.log", "agent":
["/opt/aipool/runtime/bin/python", "-I", "-m", "asuser.agent"], "agent_roots":
["/srv/aipool/users", "/home/{user}"]}``. The script uses the standard library only and
runs under ``python3 -I`` (no environment, no user site): install it owned by root, mode
0755, and let the service user run it through sudo (``docs/security.md``).
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import re
import shutil
import stat
import sys
import time
from pathlib import Path
from typing import Any

USER_MODE = 0o2750  # the user's; the service group reads; nobody else
RUN_MODE = 0o2750  # the same: the user's own process (as-user unpack) stages a job's model
_USER = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}$")
_NAME = re.compile(r"^[0-9a-f]{32}$")
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
USAGE = (
    "usage: aipool-helper user-dir ROOT USER | run-dir ROOT USER NAME | remove-run ROOT USER NAME"
    " | as-user USER pack|pack-deref|unpack|remove PATH"
)
AGENT_TASKS = ("pack", "pack-deref", "unpack", "remove")


class Refused(Exception):
    """The call is not one the helper makes; the message says why."""


def config_path() -> Path:
    return Path(__file__).resolve().with_name("aipool-helper.json")


def load_config(path: Path) -> dict[str, Any]:
    st = path.lstat()
    if not stat.S_ISREG(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
        raise Refused(f"{path} must be a regular file of root's that only root may write")
    cfg = json.loads(path.read_text(encoding="utf-8"))
    roots = cfg.get("roots")
    if not isinstance(roots, list) or not all(
        isinstance(r, str) and r.startswith("/") for r in roots
    ):
        raise Refused(f"{path}: roots must be a list of absolute paths")
    return {
        "roots": [os.path.normpath(r) for r in roots],
        "group": str(cfg.get("group", "aipool")),
        "caller": str(cfg.get("caller", "aipool")),
        "min_uid": int(cfg.get("min_uid", 1000)),
        "max_uid": int(cfg.get("max_uid", 59999)),
        "audit": cfg.get("audit"),
        "stores": [os.path.normpath(r) for r in cfg.get("stores", []) if str(r).startswith("/")],
        "agent": _words(cfg.get("agent", []), path, "agent"),
        "agent_roots": _roots(cfg.get("agent_roots", []), path),
    }


def _words(value: Any, path: Path, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(w, str) and w for w in value):
        raise Refused(f"{path}: {what} must be a list of words")
    if value and not value[0].startswith("/"):
        raise Refused(f"{path}: {what} must start with an absolute path")
    return value


def _roots(value: Any, path: Path) -> list[str]:
    if not isinstance(value, list) or not all(
        isinstance(r, str) and r.startswith("/") for r in value
    ):
        raise Refused(f"{path}: agent_roots must be a list of absolute paths")
    return [os.path.normpath(r) for r in value]


def _account(cfg: dict[str, Any], name: str) -> pwd.struct_passwd:
    if not _USER.match(name):
        raise Refused(f"not a user name: {name!r}")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise Refused(f"no such user: {name}") from None
    if not cfg["min_uid"] <= entry.pw_uid <= cfg["max_uid"] or entry.pw_uid == 0:
        raise Refused(
            f"{name} is a system account (uid {entry.pw_uid} outside"
            f" {cfg['min_uid']}..{cfg['max_uid']})"
        )
    return entry


def _root_fd(cfg: dict[str, Any], root: str) -> int:
    if os.path.normpath(root) not in cfg["roots"] or root != os.path.normpath(root):
        raise Refused(f"{root} is not a root this helper serves")
    fd = os.open(root, _DIR)
    owner = os.fstat(fd).st_uid
    if owner not in (0, _uid_of(cfg["caller"])):
        os.close(fd)
        raise Refused(f"{root} belongs neither to root nor to {cfg['caller']}")
    return fd


def _uid_of(name: str) -> int:
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return 0


def _user_fd(root_fd: int, entry: pwd.struct_passwd, *, create: bool, gid: int) -> int:
    """The user's directory under the root, opened without following a link (made if asked)."""
    name = entry.pw_name
    made = False
    if create:
        try:
            os.mkdir(name, 0o700, dir_fd=root_fd)
            made = True
        except FileExistsError:
            pass
    try:
        fd = os.open(name, _DIR, dir_fd=root_fd)
    except FileNotFoundError:
        raise Refused(f"{name} has no directory here yet") from None
    except OSError as exc:  # ELOOP: a symbolic link; ENOTDIR: not a directory
        raise Refused(f"{name}'s directory is not a directory ({exc.strerror})") from None
    if made:
        os.fchown(fd, entry.pw_uid, gid)
        os.fchmod(fd, USER_MODE)
    st = os.fstat(fd)
    if st.st_uid != entry.pw_uid:
        os.close(fd)
        raise Refused(f"{name}'s directory belongs to someone else")
    if st.st_mode & 0o007:
        os.close(fd)
        raise Refused(f"{name}'s directory is open to other users")
    return fd


def agent_argv(argv: list[str], cfg: dict[str, Any]) -> tuple[pwd.struct_passwd, list[str]]:
    """For ``as-user USER TASK PATH``: the account to become and the agent's command, once
    every word is checked (see the module's text)."""
    if len(argv) != 4 or argv[2] not in AGENT_TASKS:
        raise Refused(USAGE)
    if not cfg["agent"]:
        raise Refused("no agent is configured (agent in aipool-helper.json)")
    entry = _account(cfg, argv[1])
    path = argv[3]
    if not path.startswith("/") or os.path.normpath(path) != path or "\x00" in path:
        raise Refused(f"not an absolute, normalised path: {path!r}")
    roots = [r.replace("{user}", entry.pw_name) for r in cfg["agent_roots"]]
    if not any(path.startswith(r.rstrip("/") + "/") for r in roots):
        raise Refused(f"{path} is not under a root the agent serves")
    return entry, [*cfg["agent"], argv[2], path]


def become(entry: pwd.struct_passwd) -> dict[str, str]:
    """Drop to ``entry`` for good (groups, gid, uid); the environment its process gets."""
    os.setgroups(os.getgrouplist(entry.pw_name, entry.pw_gid))
    os.setgid(entry.pw_gid)
    os.setuid(entry.pw_uid)
    if os.getuid() != entry.pw_uid or os.geteuid() != entry.pw_uid:
        raise Refused(f"could not become {entry.pw_name}")
    try:
        os.setuid(0)
    except PermissionError:
        pass
    else:
        raise Refused("root could be regained after dropping to the user")
    os.umask(0o027)
    os.chdir("/")
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": entry.pw_dir,
        "USER": entry.pw_name,
        "LOGNAME": entry.pw_name,
        "LANG": "C.UTF-8",
    }


def run(argv: list[str], cfg: dict[str, Any]) -> str:
    """Do what ``argv`` asks (see the module's text); returns the path it made or removed."""
    if not argv or argv[0] not in ("user-dir", "run-dir", "remove-run"):
        raise Refused(USAGE)
    verb, args = argv[0], argv[1:]
    if len(args) != (2 if verb == "user-dir" else 3):
        raise Refused(USAGE)
    try:
        gid = grp.getgrnam(cfg["group"]).gr_gid
    except KeyError:
        raise Refused(f"no such group: {cfg['group']}") from None
    entry = _account(cfg, args[1])
    if verb != "user-dir" and not _NAME.match(args[2]):
        raise Refused(f"not a run directory's name: {args[2]!r}")
    root_fd = _root_fd(cfg, args[0])
    try:
        user_fd = _user_fd(root_fd, entry, create=verb != "remove-run", gid=gid)
    finally:
        os.close(root_fd)
    try:
        if verb == "user-dir":
            return os.path.join(args[0], entry.pw_name)
        name, path = args[2], os.path.join(args[0], entry.pw_name, args[2])
        if verb == "run-dir":
            os.mkdir(name, 0o700, dir_fd=user_fd)  # FileExistsError: refused below
            fd = os.open(name, _DIR, dir_fd=user_fd)
            try:
                os.fchown(fd, entry.pw_uid, gid)
                os.fchmod(fd, RUN_MODE)
            finally:
                os.close(fd)
            return path
        try:
            st = os.stat(name, dir_fd=user_fd, follow_symlinks=False)
        except FileNotFoundError:
            return path  # gone already
        if not stat.S_ISDIR(st.st_mode):
            raise Refused(f"{path} is not a directory")
        shutil.rmtree(name, dir_fd=user_fd)  # descriptor-based: never follows a link
        return path
    finally:
        os.close(user_fd)


def remove_workspace(argv: list[str], cfg: dict[str, Any]) -> str:
    """``remove-workspace ROOT ID``: ROOT/ID/workspace and all in it, whoever's entries they
    are (a dataset's writers' jobs fill it). ROOT is one of the configuration's ``stores``
    (``"stores": ["/srv/aipool/datasets"]``: the portal's DATASET_STORAGE), ID
    a dataset's number; ROOT/ID and the workspace must be the caller's own directories.
    Writers are shut out first (mode 0700: the ACL's mask then grants nobody); a writer still
    adding files inside leaves it in place after a few tries, and the call is refused."""
    if len(argv) != 3 or not re.fullmatch(r"[1-9][0-9]{0,17}", argv[2]):
        raise Refused("usage: aipool-helper remove-workspace ROOT ID")
    caller = _uid_of(cfg["caller"])
    if argv[1] not in cfg["stores"]:
        raise Refused(f"{argv[1]} is not a dataset store this helper serves")
    root_fd = os.open(argv[1], _DIR)
    if os.fstat(root_fd).st_uid not in (0, caller):
        os.close(root_fd)
        raise Refused(f"{argv[1]} belongs neither to root nor to {cfg['caller']}")
    try:
        ds_fd = os.open(argv[2], _DIR, dir_fd=root_fd)
    except FileNotFoundError:
        return os.path.join(argv[1], argv[2], "workspace")
    finally:
        os.close(root_fd)
    try:
        if os.fstat(ds_fd).st_uid != caller:
            raise Refused(f"{argv[1]}/{argv[2]} is not {cfg['caller']}'s")
        try:
            ws_fd = os.open("workspace", _DIR, dir_fd=ds_fd)
        except FileNotFoundError:
            return os.path.join(argv[1], argv[2], "workspace")
        try:
            if os.fstat(ws_fd).st_uid != caller:
                raise Refused(f"{argv[1]}/{argv[2]}/workspace is not {cfg['caller']}'s")
            os.fchmod(ws_fd, 0o700)
        finally:
            os.close(ws_fd)
        for _ in range(5):
            try:
                shutil.rmtree("workspace", dir_fd=ds_fd)  # by descriptors: never follows a link
            except FileNotFoundError:
                pass
            except OSError:
                continue  # a writer's process still adds files: try again
            return os.path.join(argv[1], argv[2], "workspace")
        raise Refused(f"{argv[1]}/{argv[2]}/workspace: its writers still add files")
    finally:
        os.close(ds_fd)


def audit(cfg: dict[str, Any] | None, argv: list[str], error: str | None) -> None:
    target = (cfg or {}).get("audit")
    if not target:
        return
    line = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "caller": os.environ.get("SUDO_USER") or pwd.getpwuid(os.getuid()).pw_name,
        "argv": argv,
        "done": error is None,
        "error": error,
    }
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(str(target), flags, 0o640)
        with os.fdopen(fd, "a", encoding="utf-8") as out:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    except OSError as exc:
        print(f"aipool-helper: cannot write the audit log {target}: {exc}", file=sys.stderr)


def main(argv: list[str] | None = None, config: Path | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    cfg = None
    try:
        if os.geteuid() != 0:
            raise Refused("aipool-helper must run as root (through sudo)")
        cfg = load_config(config or config_path())
        sudo_uid = os.environ.get("SUDO_UID")
        if sudo_uid is not None and int(sudo_uid) != _uid_of(cfg["caller"]):
            raise Refused(f"only {cfg['caller']} may call aipool-helper")
        if args[:1] == ["as-user"]:
            entry, command = agent_argv(args, cfg)
            audit(cfg, args, None)  # before the exec, which leaves nothing to write it
            env = become(entry)
            os.execve(command[0], command, env)  # noqa: S606 - the configured agent, fixed argv
        verb = remove_workspace if args[:1] == ["remove-workspace"] else run
        print(verb(args, cfg))
    except (Refused, OSError, ValueError) as exc:
        message = str(exc) if isinstance(exc, Refused) else f"{type(exc).__name__}: {exc}"
        audit(cfg, args, message)
        print(f"aipool-helper: {message}", file=sys.stderr)
        return 2
    audit(cfg, args, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
