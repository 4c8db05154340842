"""Schemathesis against our own OpenAPI document: generated requests for every operation, as
the platform admin and as a plain member, pass all of its checks: no server error, every
answer as documented, and schema-valid requests accepted (or refused for a documented rule).

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
from schemathesis.config import SchemathesisConfig

from portal.extensions import db
from tests.unit.portal.conftest import make_app
from tests.unit.portal.world import World

# Every check runs on every operation, positive_data_acceptance included: a schema-valid
# request must not be refused with 422. The document states what a schema can (patterns,
# ranges, non-empty PATCH bodies, the fields each dataset source needs, mappings' sizes);
# these operations have rules OpenAPI 3.0 cannot state, written in their descriptions, and
# may answer 422 for them (nothing else: every other status is checked as for all).
RULES_IN_WORDS = {
    "GET /api/v1/usage": "month, or from and to",
    "GET /api/v1/usage/export": "month, or from and to",
    "GET /api/v1/usage/series": "month, or from and to",
    "GET /api/v1/usage/jobs": "month, or from and to",
    "PUT /api/v1/usage/billing/plans/{name}": "rates unique per resource and model",
    "POST /api/v1/users": "the password's strength",
    "POST /api/v1/jobs": "one kind of device: gpus, shards or npus",
    "POST /api/v1/jobs/spec": "the job spec's own schema (docs/jobspec.md)",
    "POST /api/v1/models/{model_id}/versions/import": "tag keys (propertyNames)",
    "PATCH /api/v1/models/{model_id}/versions/{number}": "tag keys (propertyNames)",
    "POST /api/v1/alerts/rules": "the query's fields by kind, the scope by measure, channels",
    "PUT /api/v1/alerts/rules/{name}": "the query's fields by kind, the scope by measure, channels",
    "POST /api/v1/alerts/channels": "the fields each type of channel takes",
    "POST /api/v1/models/{model_id}/versions/{number}/fine-tune": "tag keys (propertyNames)",
}
# Operations that take If-Match: a generated ETag is not the object's version, so a
# schema-valid request may rightly be refused with 412 (nothing else changes for them).
CONDITIONAL = {
    f"{method} /api/v1/{path}"
    for path, methods in {
        "domains/{domain_id}/quota": ("PUT",),
        "projects/{project_id}/quota": ("PUT",),
        "usage/billing/plans/{name}": ("PUT",),
        "roles/{role_id}": ("PATCH", "DELETE"),
        "projects/{project_id}/members/{user_id}": ("PATCH", "DELETE"),
        "groups/{group_id}/grants": ("PUT",),
        "groups/{group_id}/grants/{project_id}": ("DELETE",),
        "models/{model_id}": ("PATCH", "DELETE"),
        "models/{model_id}/versions/{number}": ("PATCH", "DELETE"),
    }.items()
    for method in methods
}
_ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "429"]


def _accepted(label: str) -> str:
    statuses = [*_ACCEPTED, *(["422"] if label in RULES_IN_WORDS else [])]
    return ", ".join(f'"{s}"' for s in [*statuses, *(["412"] if label in CONDITIONAL else [])])


CONFIG = SchemathesisConfig.from_str(
    "".join(
        f'[[operations]]\ninclude-name = "{label}"\n'
        f"checks.positive_data_acceptance.expected-statuses = [{_accepted(label)}]\n"
        for label in sorted(RULES_IN_WORDS.keys() | CONDITIONAL)
    )
)


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
    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app, config=CONFIG)
    headers = {"Authorization": f"Bearer {world.tokens[user]}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 40
    labels = {op.label for op in operations}
    assert set(RULES_IN_WORDS) <= labels, set(RULES_IN_WORDS) - labels
    if_match = "#/components/parameters/IF_MATCH"
    conditional = {
        op.label
        for op in operations
        if any(p.get("$ref") == if_match for p in op.definition.raw.get("parameters", []))
    }
    assert conditional == CONDITIONAL
    for label in RULES_IN_WORDS:  # each rule is written where the operation is described
        op = next(o for o in operations if o.label == label)
        words = f"{op.definition.raw.get('summary')} {op.definition.raw.get('description')}"
        assert "422" in words, label
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=4,
            deadline=None,
            database=None,
            derandomize=True,  # the same examples every run: CI never flakes on luck
            suppress_health_check=list(HealthCheck),
        )
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(headers=headers)

        check()
