#!/usr/bin/env bash
# Install everything AIPool's lab, demo and tests use, from Debian 12 and PyPI packages only;
# idempotent. Nothing is taken from what a machine happens to have: a fresh Debian 12 root
# (scripts/fresh-machine.sh) gets the same result. Stops, naming what it could not install.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  # Slurm 22.05 and what it needs: munge, MariaDB for slurmdbd, JWT for slurmrestd and the portal
  slurmctld slurmd slurm-client slurmdbd slurmrestd slurm-wlm-jwt-plugin munge
  mariadb-server mariadb-client
  # the admission hook (job_submit.lua) and the lab's job-side MPI
  lua5.1 lua-posix
  openmpi-bin
  # the portal's PostgreSQL tests, browser tests, PDF report checks
  postgresql chromium fonts-noto-cjk poppler-utils
  # Debian's own python3 (3.11 on Debian 12) with venv; compilers for wheels that build
  python3 python3-venv python3-dev python3-packaging build-essential
  # the tools the lab and the tests call: namespaces, users, ACLs, the root helper (sudo),
  # processes, logs, unit checks
  util-linux passwd acl sudo procps iproute2 logrotate systemd shellcheck git ca-certificates
  # Prometheus and promtool: the lab's metrics test runs its own prometheus (not the
  # package's service), the unit tests check rules, configurations and /metrics with promtool
  prometheus
)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# python_lock: the lock of a Python's version (requirements/)
# shellcheck source=scripts/python-lock.sh
. scripts/python-lock.sh

missing=()
for p in "${PACKAGES[@]}"; do installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  # Debian's postinst scripts would start the daemons; the lab starts its own.
  printf '#!/bin/sh\nexit 101\n' | as_root tee /usr/sbin/policy-rc.d >/dev/null
  as_root chmod 755 /usr/sbin/policy-rc.d
  # a mirror caught mid-update answers with mismatched indexes or files for a few minutes:
  # each download is retried, and a failed install is tried once more on fresh indexes
  apt=(-q -o Acquire::Retries=5)
  for attempt in 1 2; do
    as_root apt-get "${apt[@]}" update || echo "bootstrap: apt-get update failed (no package registry?)" >&2
    if as_root env DEBIAN_FRONTEND=noninteractive apt-get "${apt[@]}" install -y \
      --no-install-recommends "${missing[@]}"; then break; fi
    if [ "$attempt" = 1 ]; then
      wait_s=${AIPOOL_APT_RETRY_WAIT:-60}
      echo "bootstrap: apt-get install failed; again in $wait_s s" >&2
      sleep "$wait_s"
    fi
  done
  still=()
  for p in "${missing[@]}"; do installed "$p" || still+=("$p"); done
  if [ ${#still[@]} -gt 0 ]; then
    echo "bootstrap: could not install these Debian packages: ${still[*]}" >&2
    echo "bootstrap: check that this machine reaches Debian's package registry, then rerun" >&2
    exit 1
  fi
fi

PY=${PYTHON:-/usr/bin/python3}   # Debian's own Python: the one the project claims to run on
if [ ! -x .venv/bin/python ]; then
  python_lock "$PY" venv bootstrap >/dev/null
  "$PY" -m venv .venv
fi
# the exact versions and hashes of [dev,lab] for this Python (scripts/lock.sh), then the
# checkout itself, editable; again whenever the lock or pyproject.toml changes
lock=$(python_lock .venv/bin/python venv bootstrap)
stamp=.venv/.aipool-installed
want=$(sha256sum "$lock" pyproject.toml)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  # --use-pep517: packages published only as setup.py sources (seqeval, jieba) build in an
  # isolated environment with their build requirements, not through Debian 12 pip's legacy
  # `setup.py install`, which fails on them
  pip_install() {
    .venv/bin/python -m pip install -q --require-hashes --use-pep517 -r "$lock" \
      && .venv/bin/python -m pip install -q --no-deps --use-pep517 -e .
  }
  if ! pip_install \
    && ! { echo "bootstrap: pip install failed; again in 30 s" >&2; sleep 30; pip_install; }; then
    echo "bootstrap: could not install the Python packages of $lock ([dev,lab])" >&2
    echo "bootstrap: check that this machine reaches PyPI, then rerun" >&2
    exit 1
  fi
  echo "$want" >"$stamp"
fi
# the job runtime every cluster user runs jobs from, and their `aipool` command
bash scripts/install-runtime.sh "${AIPOOL_RUNTIME:-/opt/aipool/runtime}"
echo "bootstrap done: .venv ($(.venv/bin/python --version)), Slurm $(dpkg-query -W -f='${Version}' slurmctld)"
