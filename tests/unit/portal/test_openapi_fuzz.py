"""Schemathesis against our own OpenAPI document: generated requests for every operation, as
the platform admin and as a plain member, must never fail with a server error and every
answer must match the documented schema.

Driven through schemathesis' Python API with Hypothesis (its pytest plug-in does not run
under this pytest yet).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from flask import Flask
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import positive_data_acceptance

from portal.extensions import db
from tests.unit.portal.conftest import make_app
from tests.unit.portal.world import World

# The document states the rules of bodies that a schema can state (patterns, ranges, the
# fields each dataset source needs, non-empty PATCH bodies, mappings' key lengths); rules
# between query parameters (usage: month, or from and to), between list items (a plan's rates),
# and references to other rows (a billing account's tenant) refuse some schema-valid requests
# with 422 still: that check would report those.
EXCLUDED = [positive_data_acceptance]


@pytest.fixture(scope="module")
def fuzz_app(
    seeded_db: tuple[Path, World], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Flask, World]]:
    tmp = tmp_path_factory.mktemp("fuzz")
    shutil.copyfile(seeded_db[0], tmp / "portal.db")
    app = make_app(tmp / "portal.db", tmp)
    yield app, seeded_db[1]
    with app.app_context():
        db.engine.dispose()


@pytest.mark.parametrize("user", ["admin", "alice"])
def test_every_operation_answers_as_documented(fuzz_app: tuple[Flask, World], user: str) -> None:
    app, world = fuzz_app
    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app)
    headers = {"Authorization": f"Bearer {world.tokens[user]}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 40
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=4, deadline=None, database=None, suppress_health_check=list(HealthCheck)
        )
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(headers=headers, excluded_checks=EXCLUDED)

        check()
