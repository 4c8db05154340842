"""The hostile-tenant suite runs on the same live site as the journeys (``--slurm``)."""

from tests.journeys.conftest import site  # noqa: F401 -- the fixture
