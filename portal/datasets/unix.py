"""Datasets on the file system read by exactly those the portal lets read them.

Jobs read a dataset's versions straight from the store (``<store>/<dataset id>/v<n>``), as
their users. The dataset's own directory is the gate: owned by the portal, mode 0750 with a
POSIX ACL naming each Unix user who may read the dataset in the portal (``u:<name>:r-x``):
its owner for a private one, everyone who may read its project for a project one, and those
its unexpired shares name; a public one is 0755. Nobody else can enter, whatever they know of
the path; the store itself is 0711.

The ACL follows the portal's permissions as they change: whenever a commit touches a dataset,
its shares, a membership, a group's members or grants, a domain's admins or a user, the
datasets of the projects concerned (and those shared with them) are recomputed in the same
transaction and their directories set right after it commits (a SQLAlchemy session hook, so
no service can forget it). A file system without ACLs fails closed: the directory is then the
portal's alone, and the log says so. Expired shares are removed by the control daemon
(:func:`portal.datasets.shares.expire`), which recomputes the ACL the same way.
"""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from flask import Flask, current_app, has_app_context
from sqlalchemy import ColumnElement, and_, event, or_, select
from sqlalchemy.orm import Session

from portal import userdirs
from portal.datasets.access import can
from portal.datasets.models import Dataset, DatasetShare, DatasetVersion, Visibility
from portal.datasets.storage import Store
from portal.roles.models import Role
from portal.sharing import GranteeKind
from portal.tenancy.models import DomainAdmin, GroupGrant, GroupMember, Membership, Project

log = logging.getLogger("aipool.portal.datasets")

PENDING = "aipool.dataset_acls"  # session.info: project ids touched, then directories to set


def readers(session: Session, ds: Dataset) -> frozenset[str] | None:
    """Unix names of those who may read ``ds`` in the portal (``None``: everybody)."""
    from portal.authz import load_access
    from portal.identity.models import User

    if ds.visibility == Visibility.PUBLIC:
        return None
    project = ds.project
    candidates = {ds.owner_id}
    if ds.visibility == Visibility.PROJECT:
        candidates |= _of_projects(session, [project.id])
        candidates |= set(
            session.scalars(
                select(DomainAdmin.user_id).where(DomainAdmin.domain_id == project.domain_id)
            )
        )
    candidates |= _of_shares(session, ds)
    names = set()
    for user_id in candidates:
        user = session.get(User, user_id)
        if user is not None and user.active and can(load_access(session, user), ds)[0]:
            names.add(user.username)
    return frozenset(names)


def _of_projects(session: Session, project_ids: list[int]) -> set[int]:
    """The users holding a role on these projects, themselves or through a group."""
    if not project_ids:
        return set()
    members = select(Membership.user_id).where(Membership.project_id.in_(project_ids))
    grouped = (
        select(GroupMember.user_id)
        .join(GroupGrant, GroupGrant.group_id == GroupMember.group_id)
        .where(GroupGrant.project_id.in_(project_ids))
    )
    return set(session.scalars(members)) | set(session.scalars(grouped))


def _of_shares(session: Session, ds: Dataset) -> set[int]:
    """Those the dataset's shares may name (each is checked by ``can`` after)."""
    found: set[int] = set()
    for share in ds.shares:
        if share.grantee_kind == GranteeKind.USER:
            found.add(share.grantee_id)
        elif share.grantee_kind == GranteeKind.PROJECT:
            found |= _of_projects(session, [share.grantee_id])
        else:
            in_domain = select(Project.id).where(Project.domain_id == share.grantee_id)
            found |= _of_projects(session, list(session.scalars(in_domain)))
            admins = select(DomainAdmin.user_id).where(DomainAdmin.domain_id == share.grantee_id)
            found |= set(session.scalars(admins))
    return found


def _unix(names: Iterable[str]) -> list[str]:
    known = []
    for name in sorted(names):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue  # a portal user without a Unix account has no job to read it
        known.append(name)
    return known


def apply(path: Path, allowed: frozenset[str] | None) -> None:
    """Set the gate of one dataset directory (missing: nothing to do yet)."""
    if not path.is_dir() or path.is_symlink():
        return
    if allowed is None:
        path.chmod(0o755)
        _setfacl(path, ["-b"])
        return
    path.chmod(0o750)
    entries = ["u::rwx", "g::---", "o::---", "m::r-x"]
    entries += [f"u:{name}:r-x" for name in _unix(allowed)]
    if not _setfacl(path, ["--set", ",".join(entries)]):
        path.chmod(0o700)  # fail closed: nobody but the portal


def grant_workspace(path: Path, username: str) -> bool:
    """Let ``username``'s jobs write the dataset's workspace (which stays the portal's), and
    the portal read and remove what they write there (default ACL entries). The caller has
    checked that they may write the dataset; the writers already named stay."""
    if path.is_symlink():
        return False
    return sync_workspace(path, workspace_writers(path) | {username})


def workspace_writers(path: Path) -> frozenset[str]:
    """The users the workspace's ACL names (access or default entries)."""
    tool = shutil.which("getfacl")
    if tool is None or path.is_symlink() or not path.is_dir():
        return frozenset()
    argv = [tool, "--omit-header", "--absolute-names", "--physical", "--", str(path)]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, errors="replace")
    names = set()
    for line in done.stdout.splitlines():
        kind, _, rest = line.removeprefix("default:").partition(":")
        name = rest.split(":", 1)[0]
        if kind == "user" and name:
            names.add(name)
    names.discard(pwd.getpwuid(os.geteuid()).pw_name)
    return frozenset(names)


def sync_workspace(path: Path, writers: Iterable[str]) -> bool:
    """Set the workspace's ACL to exactly ``writers`` (and the portal, by default entries);
    the entries of anyone else go, also from what inside it the portal owns, so one whose
    access ended can no longer write it, even from a shell whose directory is inside."""
    if path.is_symlink() or not path.is_dir():
        return False
    names = _unix(writers)
    me = pwd.getpwuid(os.geteuid()).pw_name
    gone = sorted(workspace_writers(path) - set(names))
    entries = ["u::rwx", "g::---", "o::---", "m::rwx", *(f"u:{n}:rwx" for n in names)]
    entries += ["d:u::rwx", "d:g::---", "d:o::---", "d:m::rwx"]
    entries += [f"d:u:{n}:rwx" for n in names]
    if os.geteuid() != 0:
        entries.append(f"d:u:{me}:rwx")
    if not _setfacl(path, ["--set", ",".join(entries)]):
        path.chmod(0o700)  # fail closed: nobody but the portal
        return False
    if gone:  # what jobs made inside inherited their entries; the portal's own entries only
        spec = ",".join(f"{k}u:{n}" for n in gone for k in ("", "d:"))
        tool = shutil.which("setfacl") or "setfacl"
        argv = [tool, "-R", "--physical", "-x", spec, "--", str(path)]
        # errors="replace": a writer's job may name its files in any bytes
        subprocess.run(argv, check=False, capture_output=True, text=True, errors="replace")
    return True


def may_write(session: Session, ds: Dataset, names: Iterable[str]) -> frozenset[str]:
    """Those of ``names`` who may still write ``ds`` in the portal."""
    from portal.authz import load_access
    from portal.identity.models import User

    kept = set()
    for name in names:
        user = session.scalar(select(User).where(User.username == name))
        if user is not None and user.active and can(load_access(session, user), ds)[1]:
            kept.add(name)
    return frozenset(kept)


def remove_files(
    root: Path, dataset_id: int, versions: Iterable[Path], remove: Callable[[Path], None]
) -> None:
    """A deleted dataset's files, whole: its workspace first (its writers shut out, then
    removed through the root helper where their jobs' entries are theirs; ``Conflict`` when
    it stays), then its versions (the portal's own) and its directory."""
    workspace = root / str(dataset_id) / "workspace"
    if workspace.is_dir() and not workspace.is_symlink():
        sync_workspace(workspace, ())
    userdirs.remove_workspace(root, dataset_id)
    for path in versions:
        remove(path)
    top = root / str(dataset_id)
    if top.is_dir() and not top.is_symlink():
        shutil.rmtree(top, ignore_errors=True)


def _setfacl(path: Path, args: list[str]) -> bool:
    tool = shutil.which("setfacl")
    if tool is None:
        log.error("setfacl is missing (Debian package acl): %s is the portal's alone", path)
        return False
    argv = [tool, *args, "--", str(path)]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, errors="replace")
    if done.returncode != 0:
        log.error("setfacl on %s failed (%s): it is the portal's alone", path, done.stderr.strip())
        return False
    return True


def store_root() -> Path:
    return Store.of(current_app.config, current_app.instance_path).root


def refresh(session: Session, datasets: Iterable[Dataset]) -> None:
    """Set the directories of ``datasets`` now (outside the session hook: the CLI, tests)."""
    root = store_root()
    for ds in datasets:
        apply(root / str(ds.id), readers(session, ds))
        _sync_writers(session, root, ds)


def _sync_writers(session: Session, root: Path, ds: Dataset) -> None:
    """The workspace's writers cut to those who may still write the dataset."""
    workspace = root / str(ds.id) / "workspace"
    named = workspace_writers(workspace)
    if named:
        kept = may_write(session, ds, named)
        if kept != named:
            sync_workspace(workspace, kept)


# ------------------------------------------------------------------ the session hook
_WATCHED = (
    Dataset,
    DatasetVersion,
    DatasetShare,
    Membership,
    GroupMember,
    GroupGrant,
    DomainAdmin,
    Project,
    Role,  # a role that gains or loses project.read opens or closes project shares
)


def _projects_of(session: Session, obj: Any) -> set[int]:
    from portal.identity.models import User

    if isinstance(obj, DatasetVersion | DatasetShare):
        ds = session.get(Dataset, obj.dataset_id)
        return {ds.project_id} if ds is not None else set()
    if isinstance(obj, Dataset | Membership | GroupGrant):
        return {obj.project_id} if obj.project_id else set()
    if isinstance(obj, Project):
        return {obj.id} if obj.id else set()
    if isinstance(obj, DomainAdmin):
        return set(session.scalars(select(Project.id).where(Project.domain_id == obj.domain_id)))
    if isinstance(obj, GroupMember):
        rows = select(GroupGrant.project_id).where(GroupGrant.group_id == obj.group_id)
        return set(session.scalars(rows))
    if isinstance(obj, Role):
        held = select(Membership.project_id).where(Membership.role_id == obj.id)
        granted = select(GroupGrant.project_id).where(GroupGrant.role_id == obj.id)
        return set(session.scalars(held)) | set(session.scalars(granted))
    if isinstance(obj, User):
        rows = select(Membership.project_id).where(Membership.user_id == obj.id)
        shared = (
            select(Dataset.project_id)
            .join(DatasetShare, DatasetShare.dataset_id == Dataset.id)
            .where(
                DatasetShare.grantee_kind == GranteeKind.USER.value,
                DatasetShare.grantee_id == obj.id,
            )
        )
        return (
            set(session.scalars(rows))
            | set(session.scalars(select(Dataset.project_id).where(Dataset.owner_id == obj.id)))
            | set(session.scalars(shared))
        )
    return set()


def _after_flush(session: Session, _context: Any) -> None:
    from portal.identity.models import User

    touched: set[int] = session.info.setdefault(PENDING, set())
    for obj in [*session.new, *session.dirty, *session.deleted]:
        if isinstance(obj, (*_WATCHED, User)):
            touched |= _projects_of(session, obj)


def _before_commit(session: Session) -> None:
    if not has_app_context():
        return
    if session.new or session.dirty or session.deleted:
        session.flush()  # commit flushes after this hook: what it writes must count too
    projects = session.info.pop(PENDING, set())
    if not projects:
        return
    root = store_root()
    plan = session.info.setdefault(PENDING + ".plan", {})
    writers = session.info.setdefault(PENDING + ".writers", {})
    for ds in session.scalars(select(Dataset).where(_concerned(projects))):
        plan[root / str(ds.id)] = readers(session, ds)
        workspace = root / str(ds.id) / "workspace"
        named = workspace_writers(workspace)
        if named:
            kept = may_write(session, ds, named)
            if kept != named:
                writers[workspace] = kept


def _concerned(projects: set[int]) -> ColumnElement[bool]:
    """The datasets of these projects, and those shared with them or with their domains."""
    domains = select(Project.domain_id).where(Project.id.in_(projects))
    shared = select(DatasetShare.dataset_id).where(
        or_(
            and_(
                DatasetShare.grantee_kind == GranteeKind.PROJECT.value,
                DatasetShare.grantee_id.in_(projects),
            ),
            and_(
                DatasetShare.grantee_kind == GranteeKind.DOMAIN.value,
                DatasetShare.grantee_id.in_(domains),
            ),
        )
    )
    return or_(Dataset.project_id.in_(projects), Dataset.id.in_(shared))


def _after_commit(session: Session) -> None:
    for path, allowed in session.info.pop(PENDING + ".plan", {}).items():
        try:
            apply(path, allowed)
        except OSError as exc:
            log.error("could not set %s for its readers: %s", path, exc)
    for path, kept in session.info.pop(PENDING + ".writers", {}).items():
        try:
            sync_workspace(path, kept)
        except OSError as exc:
            log.error("could not set %s for its writers: %s", path, exc)


def _after_rollback(session: Session) -> None:
    session.info.pop(PENDING, None)
    session.info.pop(PENDING + ".plan", None)
    session.info.pop(PENDING + ".writers", None)


def install(app: Flask) -> None:
    """Listen on every session (once per process; the hooks act inside an app context)."""
    if getattr(install, "done", False):
        return
    event.listen(Session, "after_flush", _after_flush)
    event.listen(Session, "before_commit", _before_commit)
    event.listen(Session, "after_commit", _after_commit)
    event.listen(Session, "after_soft_rollback", lambda s, _t: _after_rollback(s))
    install.done = True  # type: ignore[attr-defined]
