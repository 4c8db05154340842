"""Reports of the lab's real jobs in Chinese, through the ``aipool`` command: a whole-GPU and a
shard job are imported from sacct; the report (pool sizes from the lab's own nodes) comes out as
a CSV with Chinese headers and a byte order mark, and as a PDF that embeds a CJK font and gives
its Chinese text back, headed by the site's name."""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, select

from accounting import migrate
from accounting.ingest import import_from_slurm
from accounting.models import UsageRecord
from aipool.cli import main
from aipool.lab.cluster import Lab
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import JobState
from tests.integration.conftest import wait_until

pytestmark = pytest.mark.slurm

JOBS = [("alice", "nlp", "gpu:a100:1"), ("bob", "vision", "shard:8")]
SITE = "北大计算中心"


def _tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} (poppler-utils) is needed: scripts/bootstrap.sh installs it"
    return path


def test_a_chinese_report_of_the_labs_jobs(client: SlurmClient, lab: Lab, tmp_path: Path) -> None:
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=5)
    ids = [
        client.submit(
            "#!/bin/bash\nsleep 2\n",
            [
                f"--chdir={lab.cfg.jobs}",
                "--output=/dev/null",
                "--time=2",
                f"--account={account}",
                "-p",
                "gpu",
                f"--gres={gres}",
            ],
            as_user=user,
        )
        for user, account, gres in JOBS
    ]

    def finished() -> bool:
        recs = client.accounting(job_ids=ids)
        return len(recs) == len(ids) and all(r.state is JobState.COMPLETED for r in recs)

    wait_until(finished, 90, interval=1)
    db = tmp_path / "acct.db"
    engine = create_engine(f"sqlite:///{db}")
    migrate.upgrade(engine)

    def imported() -> bool:
        # slurmdbd learns a job's partition and end a moment after sacct first says COMPLETED
        # (its record is still the bare allocation): import until both jobs are in
        import_from_slurm(engine, client, since=t0)
        with engine.connect() as conn:
            rows = conn.execute(select(UsageRecord.job_id).where(UsageRecord.job_id.in_(ids)))
            return len(rows.all()) == len(ids)

    wait_until(imported, 60, interval=1)
    engine.dispose()

    start = t0.replace(minute=0, second=0)
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    period = ["--from", start.isoformat(), "--to", end.isoformat()]
    common = ["accounting", "report", "--db", f"sqlite:///{db}", "--lab", "--by", "user", *period]
    common += ["--locale", "zh_CN", "--site-name", SITE]
    runner = CliRunner()

    csv_file = tmp_path / "usage.csv"
    res = runner.invoke(main, [*common, "--format", "csv", "-o", str(csv_file)])
    assert res.exit_code == 0, res.output
    data = csv_file.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    lines = data.decode("utf-8-sig").splitlines()
    assert lines[0].startswith("用户,作业,GPU 卡时,NPU 卡时,CPU 核时")
    users = {ln.split(",")[0] for ln in lines[1:]}
    assert {"alice", "bob", "合计"} <= users

    pdf = tmp_path / "usage.pdf"
    res = runner.invoke(main, [*common, "--format", "pdf", "-o", str(pdf)])
    assert res.exit_code == 0, res.output
    fonts = subprocess.run(
        [_tool("pdffonts"), str(pdf)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert "NotoSansCJK" in fonts
    text = subprocess.run(
        [_tool("pdftotext"), str(pdf), "-"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    for words in (SITE, "按用户统计的用量", "资源池利用率", "用户排行", "alice", "bob"):
        assert words in text, words
    # pool sizes from the lab's own nodes: its partitions are on the utilisation chart
    assert "gpu" in text
    assert "npu" in text
