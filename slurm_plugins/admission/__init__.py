"""Admission hook: the policy file, the Lua table rendered from it and job_submit.lua.

``aipool policy render`` validates the policy (:mod:`.config`), builds the table the hook
looks things up in (:mod:`.table`) and installs both next to slurm.conf (:mod:`.render`).
"""

from slurm_plugins.admission.config import PolicyConfig, PolicyError, load_policy, parse_policy
from slurm_plugins.admission.render import HOOK_FILE, TABLE_FILE, render_hook, write_files

__all__ = [
    "HOOK_FILE",
    "TABLE_FILE",
    "PolicyConfig",
    "PolicyError",
    "load_policy",
    "parse_policy",
    "render_hook",
    "write_files",
]
