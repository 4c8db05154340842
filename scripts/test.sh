#!/usr/bin/env bash
# The whole test suite: lint, types, unit tests, then integration tests on the real lab cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
started=0
# tests start their own policy daemons and portals: a demo's would steer their jobs
.venv/bin/aipool lab services down >/dev/null 2>&1 || true
if ! .venv/bin/aipool lab status >/dev/null 2>&1; then
  .venv/bin/aipool lab up
  started=1
fi
cleanup() { if [ "$started" = 1 ]; then .venv/bin/aipool lab down || true; fi; }
trap cleanup EXIT
.venv/bin/python -m pytest --slurm "$@"
