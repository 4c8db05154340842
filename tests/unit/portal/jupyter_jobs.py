"""Builders for the Jupyter proxy's tests: a Jupyter job as the portal starts one (its history
row says so), on a node Slurm knows with an address, its server's port in the range the
portal proxies to, and the connection file the job writes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from portal.extensions import db
from portal.jobs.models import JUPYTER, SPEC, JobRecord
from slurm_plugins.client.models import Node, NodeState
from tests.unit.portal.conftest import Env

NODE = "jnode1"


def jupyter_job(
    env: Env,
    tmp: Path,
    port: int,
    monkeypatch: pytest.MonkeyPatch,
    *,
    user: str = "alice",
    project: str = "nlp",
    launched: bool = True,
    address: str = "127.0.0.1",
    conn: dict[str, Any] | None = None,
) -> int:
    """A running Jupyter job of ``user`` on node ``NODE`` (at ``address``), whose server
    listens on ``port``: the only port of the range in this test. ``launched``: submitted
    by the portal as a Jupyter job (else it merely carries the label, as ``sbatch`` can)."""
    monkeypatch.setitem(env.app.config, "PROXY_PORT_RANGE", f"{port}-{port}")
    env.slurm.nodes_list.append(Node(name=NODE, state=NodeState.MIXED, address=address))
    now = datetime.now(UTC)
    job = env.slurm.add_job(
        user,
        project,
        comment="aipool:name=nb,jupyter=1",
        stdout_path=str(tmp / "nb.out"),
        nodes=NODE,
        node_count=1,
        submit_time=now,
    )
    if launched:
        with env.app.app_context():
            db.session.add(
                JobRecord(
                    job_id=job,
                    user_id=env.world.users[user],
                    project_id=env.world.projects[project],
                    kind=SPEC,
                    name="nb",
                    request={"jupyter": True},
                    app=JUPYTER,
                    submitted_at=now,
                )
            )
            db.session.commit()
    written = {
        "job_id": job,
        "app": "lab",
        "host": address,
        "port": port,
        "token": "s3cret",
        "base_url": f"/jupyter/{job}/",
        "url": f"http://{address}:{port}/jupyter/{job}/?token=s3cret",
    }
    write_connection(tmp, job, {**written, **(conn or {})})
    return job


def write_connection(tmp: Path, job: int, conn: dict[str, Any]) -> None:
    (tmp / f"jupyter-{job}.json").write_text(json.dumps(conn))
