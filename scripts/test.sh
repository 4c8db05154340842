#!/usr/bin/env bash
# The whole test suite: lint and types; then the journeys, the hostile tenant and the integration
# tests on the real lab cluster, with the unit and browser tests (which need no lab) beside them.
# Extra arguments go to pytest (CI adds --no-skips: every test must run on a fresh machine).
#   --live   only what runs against the live lab: the journeys, the hostile tenant and the
#            integration suite (CI runs this on Debian 13's Slurm 24.11 beside the whole suite
#            on Debian 12's 22.05)
#   --live --static   that, with lint, types and the unit tests (not the browser tests): CI on
#            Debian 13, whose Python and locked packages differ from Debian 12's
set -euo pipefail
cd "$(dirname "$0")/.."
live=0
static=1
if [ "${1:-}" = --live ]; then
  live=1; static=0; shift
  if [ "${1:-}" = --static ]; then static=1; shift; fi
fi
t0=$SECONDS
stage() { echo "test.sh: $1 at $((SECONDS - t0)) s"; }
bash scripts/bootstrap.sh
stage "bootstrap done"
if [ "$static" = 1 ]; then
  .venv/bin/ruff check .
  .venv/bin/ruff format --check .
  .venv/bin/mypy
  .venv/bin/lint-imports --no-cache --no-logo  # the layering contracts of pyproject.toml
  .venv/bin/python scripts/check_file_ops.py    # file operations only where services may
  stage "ruff and mypy done"
  # the unit and browser tests need no lab: they run beside the live suites below, which
  # spend most of their time waiting on Slurm; their output follows the integration suite's
  mkdir -p out
  suites=(--ignore=tests/integration --ignore=tests/journeys --ignore=tests/security)
  if [ "$live" = 1 ]; then suites=(tests/unit); fi
  .venv/bin/python -m pytest -p no:cacheprovider --durations=20 "${suites[@]}" "$@" \
    >out/test-offline.log 2>&1 &
  offline=$!
fi
started=0
if ! .venv/bin/aipool lab status >/dev/null 2>&1; then
  .venv/bin/aipool lab up
  started=1
  stage "lab up"
fi
cleanup() {
  if [ -n "${offline:-}" ]; then kill "$offline" 2>/dev/null || true; fi
  if [ "$started" = 1 ]; then .venv/bin/aipool lab down || true; fi
}
trap cleanup EXIT
status=0
# the journeys and the hostile tenant: the lab and services as `scripts/demo.sh` leaves them,
# as the demo's users
.venv/bin/aipool lab services up
.venv/bin/python -m pytest --slurm tests/journeys tests/security "$@" || status=$?
stage "journeys and hostile tenant exited $status"
# the rest start their own policy daemons and portals: the site's would steer their jobs;
# and they expect the lab's own admission policy, which the site's portal rewrites when a
# tenant admin saves a quota (`lab up` on a running lab puts the lab's files back)
.venv/bin/aipool lab services down >/dev/null
.venv/bin/aipool lab up >/dev/null
rest=0
.venv/bin/python -m pytest --slurm --durations=20 tests/integration "$@" || rest=$?
stage "integration exited $rest"
if [ "$static" = 1 ]; then
  wait "$offline" || rest2=$?
  offline=
  cat out/test-offline.log
  stage "unit and browser tests exited ${rest2:-0}"
  if [ "$rest" = 0 ]; then rest=${rest2:-0}; fi
fi
if [ "$status" = 0 ]; then status=$rest; fi
exit "$status"
