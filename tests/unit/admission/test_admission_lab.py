"""The lab installs the hook: its files come with slurm.conf, ahead of it, the table in the
portal's own directory."""

from __future__ import annotations

from pathlib import Path

from aipool.lab.config import DEFAULT_INVENTORY, LabConfig
from aipool.lab.render import render_lab
from gres.inventory import load_inventory
from slurm_plugins.admission import HOOK_FILE, TABLE_FILE, load_policy, render_hook
from slurm_plugins.admission.config import LAB_POLICY
from slurm_plugins.admission.render import ADMISSION_SUBDIR


def test_lab_renders_the_hook_before_the_slurm_conf_that_loads_it(tmp_path: Path) -> None:
    cfg = LabConfig.from_env({"AIPOOL_LAB_DIR": str(tmp_path)})
    inv = load_inventory(DEFAULT_INVENTORY).with_device_dir(str(cfg.dev))
    files = render_lab(cfg, inv, db_password="pw", job_submit=True)
    names = list(files)
    table = f"{ADMISSION_SUBDIR}/{TABLE_FILE}"  # the portal's to rewrite; the hook stays root's
    assert names.index(table) < names.index(HOOK_FILE) < names.index("slurm.conf")
    assert "JobSubmitPlugins=lua" in files["slurm.conf"].splitlines()
    policy = load_policy(LAB_POLICY)
    assert {n: files[n] for n in (table, HOOK_FILE)} == render_hook(
        policy, table_dir=ADMISSION_SUBDIR
    )
    # beside the table, the self-contained pair the portal writes and explains refusals with
    pair = {n: files[f"{ADMISSION_SUBDIR}/{n}"] for n in (TABLE_FILE, HOOK_FILE)}
    assert pair == render_hook(policy)
    plain = render_lab(cfg, inv, db_password="pw")
    assert HOOK_FILE not in plain
    assert "JobSubmitPlugins=lua" not in plain["slurm.conf"]
