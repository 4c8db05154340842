#!/usr/bin/env bash
# Install what AIPool needs on Debian 12 (Slurm, munge, MariaDB, Python venv) — idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  slurmctld slurmd slurm-client slurmdbd slurmrestd munge
  mariadb-server mariadb-client
  lua5.1 lua-posix
  openmpi-bin
  postgresql chromium poppler-utils
  python3-venv util-linux passwd
  logrotate
)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  # Debian's postinst scripts would start the daemons; the lab starts its own.
  printf '#!/bin/sh\nexit 101\n' | as_root tee /usr/sbin/policy-rc.d >/dev/null
  as_root chmod 755 /usr/sbin/policy-rc.d
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}"
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.aipool-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev,lab]'
  touch "$stamp"
fi
echo "bootstrap done: .venv ready, Slurm $(dpkg-query -W -f='${Version}' slurmctld)"
