"""Who may read and write a dataset, judged on the object (the rules: portal.datasets.service).

Apart from the service so that the directories' ACLs (portal.datasets.unix) follow the same
rule without importing the service that sets them.
"""

from __future__ import annotations

from portal.authz import Access, Perm
from portal.datasets.models import Dataset, Visibility


def can(access: Access, ds: Dataset) -> tuple[bool, bool]:
    """(read, write) of the caller on ``ds``."""
    if access.platform_admin or ds.owner_id == access.user_id:
        return True, True
    on_project = access.on_project(ds.project)
    write = ds.visibility != Visibility.PRIVATE and Perm.PROJECT_MANAGE in on_project
    read = (
        write
        or ds.visibility == Visibility.PUBLIC
        or (ds.visibility == Visibility.PROJECT and bool(on_project))
    )
    return read, write
