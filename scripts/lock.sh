#!/usr/bin/env bash
# Regenerate the locks in requirements/: the exact version and the hashes of every Python package
# AIPool installs, for each supported Python on x86_64 Linux (Debian 12's 3.11, Debian 13's 3.13):
#   requirements/venv-<python>.txt     the development environment, .venv ([dev,lab]):
#                                      scripts/bootstrap.sh
#   requirements/runtime-<python>.txt  the job runtime ([lab], no development tools): the same
#                                      versions, a subset; scripts/install-runtime.sh and the
#                                      aipool Ansible role
# within pyproject.toml's ranges and requirements/constraints.txt (caps the code needs).
#
#   usage: scripts/lock.sh [--upgrade | --upgrade-package NAME ...]
#
# Without options a lock keeps its versions and changes only what pyproject.toml now demands;
# --upgrade takes every package's newest release, --upgrade-package NAME only NAME's (repeat
# it). The locks are made with uv (the .venv's, installed there when missing); the CPU build of
# torch for Python 3.11 comes from pip's find-links directories (PIP_FIND_LINKS).
# Then: scripts/test.sh on both Debian releases (CI), and commit requirements/.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHONS=(3.11 3.13)

upgrade=()
while [ $# -gt 0 ]; do
  case "$1" in
    --upgrade) upgrade+=(--upgrade); shift ;;
    --upgrade-package)
      upgrade+=(--upgrade-package "${2:?--upgrade-package needs a name}"); shift 2 ;;
    *) echo "lock: unknown option $1 (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done

uv=$(command -v uv || true)
if [ -z "$uv" ]; then
  uv=.venv/bin/uv
  if [ ! -x "$uv" ]; then
    if [ ! -x .venv/bin/python ]; then
      echo "lock: no .venv: run scripts/bootstrap.sh first" >&2
      exit 1
    fi
    .venv/bin/python -m pip install -q 'uv>=0.9,<1'
  fi
fi
links=()
for d in ${PIP_FIND_LINKS:-}; do links+=(--find-links "$d"); done

mkdir -p requirements
for py in "${PYTHONS[@]}"; do
  # Debian 12's glibc is 2.36, Debian 13's 2.41: wheels for either run on the machine
  common=(--python-version "$py" --python-platform x86_64-manylinux_2_36 --generate-hashes
    --constraint requirements/constraints.txt --custom-compile-command scripts/lock.sh
    --quiet "${links[@]}" "${upgrade[@]}")
  "$uv" pip compile pyproject.toml --extra dev --extra lab "${common[@]}" \
    -o "requirements/venv-$py.txt"
  # the runtime's versions are the development environment's: that lock constrains it
  "$uv" pip compile pyproject.toml --extra lab "${common[@]}" \
    --constraint "requirements/venv-$py.txt" -o "requirements/runtime-$py.txt"
  echo "lock: Python $py: $(grep -c '^[a-z0-9]' "requirements/venv-$py.txt") packages in" \
    "requirements/venv-$py.txt, $(grep -c '^[a-z0-9]' "requirements/runtime-$py.txt") in" \
    "requirements/runtime-$py.txt;" \
    "$(grep -oE '^(torch|numpy|mypy)==[^ ]*' "requirements/venv-$py.txt" | tr '\n' ' ')"
done
