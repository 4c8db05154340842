#!/usr/bin/env bash
# The whole test suite: lint, types, unit tests, then integration tests on the real lab cluster.
# Extra arguments go to pytest (CI adds --no-skips: every test must run on a fresh machine).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
stage() { echo "test.sh: $1 at $((SECONDS - t0)) s"; }
bash scripts/bootstrap.sh
stage "bootstrap done"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
stage "ruff and mypy done"
started=0
# tests start their own policy daemons and portals: a demo's would steer their jobs
.venv/bin/aipool lab services down >/dev/null 2>&1 || true
if ! .venv/bin/aipool lab status >/dev/null 2>&1; then
  .venv/bin/aipool lab up
  started=1
  stage "lab up"
fi
cleanup() { if [ "$started" = 1 ]; then .venv/bin/aipool lab down || true; fi; }
trap cleanup EXIT
status=0
.venv/bin/python -m pytest --slurm "$@" || status=$?
stage "pytest exited $status"
exit "$status"
