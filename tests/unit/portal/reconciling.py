"""Running the portal's control daemon in tests: one pass, as ``aipool reconcile --once`` does."""

from __future__ import annotations

from portal.control.daemon import Daemon
from tests.unit.portal.conftest import Env


def reconcile(env: Env) -> list[str]:
    """One full pass (inference services and registry runs); what it did, one line each."""
    report = Daemon(env.app).run_pass(full=True)
    assert report.ran, "another reconciler held the lock"
    return report.lines
