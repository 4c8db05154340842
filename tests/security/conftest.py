"""The hostile-tenant suite runs on the same live site as the journeys (``--slurm``); each
module keeps one ledger of attempts and leaks, reported when it ends (leaks must be 0)."""

from collections.abc import Iterator

import pytest

from tests.journeys.conftest import site  # noqa: F401 -- the fixture
from tests.security.ledger import Ledger


@pytest.fixture(scope="module")
def ledger(request: pytest.FixtureRequest) -> Iterator[Ledger]:
    book = Ledger()
    yield book
    book.report(request.module.__name__.rsplit(".", 1)[-1])
