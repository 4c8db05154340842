"""The AIPool web portal: tenants, RBAC, quotas synced to Slurm, jobs and monitoring."""

from portal.app import create_app

__all__ = ["create_app"]
