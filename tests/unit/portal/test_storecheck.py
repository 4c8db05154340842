"""The start-up check names every place where the file store and the database disagree."""

from __future__ import annotations

from pathlib import Path

from portal.datasets.models import Dataset, DatasetVersion
from portal.extensions import db
from portal.storecheck import check
from tests.unit.portal.conftest import Env


def test_orphan_directories_and_missing_files_are_named(env: Env, tmp_path: Path) -> None:
    datasets, models = tmp_path / "datasets", tmp_path / "models"
    (datasets / "1" / "v1").mkdir(parents=True)  # the row's files: agree
    (datasets / "1" / "workspace").mkdir()  # not a version: ignored
    (datasets / "7" / "v1").mkdir(parents=True)  # an older database's dataset 7
    (models / "3" / "1").mkdir(parents=True)  # no model row at all
    with env.app.app_context():
        s = db.session
        ds = Dataset(
            project_id=env.world.projects["nlp"], owner_id=env.world.users["alice"], name="d"
        )
        s.add(ds)
        s.flush()
        for n in (1, 2):  # v2's directory is gone
            s.add(
                DatasetVersion(
                    dataset_id=ds.id, version=n, path=str(datasets / "1" / f"v{n}"),
                    checksum="0" * 64, file_count=0, size_bytes=0, source="upload",
                )
            )  # fmt: skip
        s.flush()
        lines = [m.line() for m in check(s, datasets, models)]
        s.rollback()
    assert lines == [
        f"dataset files missing: {datasets}/1/v2 (the database lists them)",
        f"dataset directory without a database row: {datasets}/7/v1",
        f"model directory without a database row: {models}/3/1",
    ]


def test_an_empty_store_and_database_agree(env: Env, tmp_path: Path) -> None:
    with env.app.app_context():
        assert check(db.session, tmp_path / "none", tmp_path / "nothing") == []
