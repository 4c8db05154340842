#!/usr/bin/env bash
# The main job: set everything up, start the lab cluster and run the demo workload.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/aipool lab up
.venv/bin/aipool lab services up     # the policy daemon and the portal with the demo tenants
.venv/bin/aipool lab demo
echo
echo "The lab keeps running. Use it with:  eval \"\$(.venv/bin/aipool lab env)\"; sinfo; squeue"
echo "Stop it with:                        .venv/bin/aipool lab down"
