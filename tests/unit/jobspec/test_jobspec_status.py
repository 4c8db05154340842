"""Progress from a job's output and the Jupyter connection file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobspec.status import connection_path, parse_progress, read_connection, read_tail


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("nothing here", None),
        ("progress: 42%\n", 42.0),
        ("Progress=0.5\n", 50.0),
        ("progress: 10%\nprogress: 12.5%\n", 12.5),
        ("epoch 3:  37%|███▋      | 37/100 [00:10<00:17]", 37.0),
        ("progress: 250%", None),
    ],
)
def test_parse_progress(text: str, expected: float | None) -> None:
    assert parse_progress(text) == expected


def test_read_tail(tmp_path: Path) -> None:
    out = tmp_path / "job.out"
    out.write_text("x" * 100 + "progress: 99%\n")
    assert read_tail(out, max_bytes=14) == "progress: 99%\n"
    assert read_tail(tmp_path / "missing") == ""


def test_connection_file(tmp_path: Path) -> None:
    path = connection_path(tmp_path, 7)
    assert path.name == "jupyter-7.json"
    assert read_connection(path) is None
    data = {
        "job_id": 7,
        "app": "lab",
        "host": "gpu1",
        "port": 8888,
        "token": "t",
        "url": "http://gpu1:8888/?token=t",
    }
    path.write_text(json.dumps(data))
    conn = read_connection(path)
    assert conn is not None
    assert (conn.host, conn.port, conn.token) == ("gpu1", 8888, "t")
    path.write_text("{half")
    assert read_connection(path) is None
