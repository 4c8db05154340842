#!/usr/bin/env bash
# Install (or bring up to date) the job runtime: the Python environment that every job the
# portal and the presets run executes from (evaluation, fine-tuning, inference replicas,
# Jupyter), and the user-facing `aipool` command. It must be readable and runnable by every
# cluster user, so it lives outside any checkout or home directory.
#   usage: scripts/install-runtime.sh [PREFIX]     (default /opt/aipool/runtime)
# PREFIX/bin/aipool is linked into /usr/local/bin (AIPOOL_RUNTIME_LINK=0: not linked).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-${AIPOOL_RUNTIME:-/opt/aipool/runtime}}
case "$prefix" in /*) ;; *) echo "install-runtime: PREFIX must be an absolute path" >&2; exit 2 ;; esac
umask 022                                  # every user reads and runs what is installed here
PY=${PYTHON:-/usr/bin/python3}
# shellcheck source=scripts/python-lock.sh
. scripts/python-lock.sh                  # python_lock: the lock of a Python's version
if [ ! -x "$prefix/bin/python" ]; then
  python_lock "$PY" runtime install-runtime >/dev/null
  mkdir -p "$prefix"
  "$PY" -m venv "$prefix"
fi
# the exact versions and hashes of [lab] for this Python (scripts/lock.sh), then AIPool itself;
# again whenever the lock or pyproject.toml changes
lock=$(python_lock "$prefix/bin/python" runtime install-runtime)
stamp=$prefix/.aipool-runtime-installed
want=$(sha256sum "$lock" pyproject.toml)
sources=(pyproject.toml aipool asuser gres plumbing slurm_plugins jobspec accounting portal sim dbtypes translations)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "install-runtime: installing the job runtime in $prefix from $lock"
  # --use-pep517: as in bootstrap.sh (seqeval and jieba are setup.py sources only)
  if ! "$prefix/bin/python" -m pip install -q --require-hashes --use-pep517 -r "$lock" \
    || ! "$prefix/bin/python" -m pip install -q --no-deps --force-reinstall --use-pep517 .; then
    echo "install-runtime: could not install the runtime's Python packages (is PyPI reachable?)" >&2
    exit 1
  fi
elif [ -n "$(find "${sources[@]}" -newer "$stamp" -type f -not -name '*.pyc' -print -quit)" ]; then
  echo "install-runtime: updating AIPool itself in $prefix"
  "$prefix/bin/python" -m pip install -q --no-deps --force-reinstall .
fi
rm -rf build                              # setuptools' in-tree build directory
echo "$want" >"$stamp"                    # its time: what the next run finds newer
chmod -R a+rX "$prefix"
if [ "${AIPOOL_RUNTIME_LINK:-1}" = 1 ]; then
  ln -sfn "$prefix/bin/aipool" /usr/local/bin/aipool
fi
echo "job runtime: $prefix ($("$prefix/bin/python" --version)); aipool: $(command -v aipool || echo "$prefix/bin/aipool")"
