"""The lab cluster's settings, as the packages' commands take them with ``--lab``.

The product packages know nothing of the lab: their commands read the lab's settings from
click's context, where the ``aipool`` command puts them (:func:`install`). Each is a callable,
so the lab's configuration is read only when ``--lab`` is given.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from aipool.lab.config import LabConfig
from aipool.lab.host import token_socket


def _config() -> LabConfig:
    from aipool.lab.cluster import Lab

    return Lab().cfg


def slurm_env(cfg: LabConfig | None = None) -> dict[str, str]:
    """The environment a Slurm client needs for the lab (``aipool accounting … --lab``)."""
    return dict((cfg or _config()).env())


def portal_settings(cfg: LabConfig | None = None) -> dict[str, Any]:
    """The portal's settings for the lab cluster (``aipool portal --lab``)."""
    cfg = cfg or _config()
    return {
        "SLURM_ENV": dict(cfg.env()),
        "SLURM_REST_URL": cfg.rest_url,
        # users' slurmrestd tokens come from the token service; the portal never reads the key
        "SLURM_TOKEN_SOCKET": str(token_socket(cfg)),
        # where the lab's node agents write utilisation samples (the policy daemon's dir)
        "SAMPLES_DIR": str(cfg.root / "policy" / "samples"),
        # the compute scores per node kind (aipool gres score run --lab --store …)
        "SCORES_FILE": str(cfg.root / "scores.json"),
        # elastic nodes: the energy saved, from their programs' event log (none: not shown)
        "POWER_CONFIG": str(cfg.etc / "power.yaml") if cfg.power else None,
        # the policy daemon's decision log (why it holds or steers a job), for the job pages
        "POLICY_STATE_DIR": str(cfg.root / "policy"),
        # and its configuration (`aipool lab services up` writes it): the guaranteed quotas
        "POLICY_CONFIG": str(cfg.etc / "policy-daemon.yaml"),
        # the admission table's directory, the portal's to write (the hook stays root's)
        "ADMISSION_DIR": str(cfg.admission),
        # users' directories are made by the root helper (aipool lab services up installs it)
        "ROOT_HELPER": ["sudo", "-n", str(cfg.root_helper)],
        # what users' jobs run (evaluation, fine-tuning, replicas, Jupyter)
        "JOB_RUNTIME": str(cfg.runtime),
        # the portal's one home, under the lab's root: `aipool lab down` wipes it with the rest
        "PORTAL_HOME": str(cfg.root / "portal"),
        # the demo is a Chinese site: Chinese where neither the user nor the browser says,
        # dates in China's time
        "DEFAULT_LOCALE": "zh_CN",
        "TIMEZONE": "Asia/Shanghai",
    }


def install(meta: MutableMapping[str, Any]) -> None:
    """Put the lab's settings where the packages' ``--lab`` options look (click's
    ``ctx.meta``)."""
    from accounting.edge import LAB_SLURM_ENV
    from portal.cli import LAB_SETTINGS

    meta[LAB_SLURM_ENV] = slurm_env
    meta[LAB_SETTINGS] = portal_settings
