"""Shared test options: ``--slurm`` runs the integration tests against the lab cluster;
``--no-skips`` fails a run in which any test was skipped (CI: a fresh machine must have every
tool the tests use)."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slurm",
        action="store_true",
        help="run integration tests against the running lab cluster (`aipool lab up`)",
    )
    parser.addoption(
        "--no-skips",
        action="store_true",
        help="fail the run if any test is skipped (a missing tool, lab or browser)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--slurm"):
        return
    skip = pytest.mark.skip(reason="needs the lab cluster: run with --slurm")
    for item in items:
        if "slurm" in item.keywords:
            item.add_marker(skip)


def _skipped(config: pytest.Config) -> list[pytest.TestReport]:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    return list(reporter.stats.get("skipped", [])) if reporter is not None else []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if session.config.getoption("--no-skips") and exitstatus == 0 and _skipped(session.config):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    skipped = _skipped(config)
    if config.getoption("--no-skips") and skipped:
        terminalreporter.write_line(
            f"--no-skips: {len(skipped)} test(s) skipped; each must run on this machine",
            red=True,
        )
