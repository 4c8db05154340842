# shellcheck shell=bash
# Sourced by scripts/bootstrap.sh and scripts/install-runtime.sh, in the checkout's root.
# python_lock PYTHON KIND WHO: requirements/KIND-<version>.txt, the lock of PYTHON's version;
# none (an unsupported Python): stops, naming the versions that have one
python_lock() {
  local v f have=""
  v=$("$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ -f "requirements/$2-$v.txt" ]; then echo "requirements/$2-$v.txt"; return; fi
  for f in requirements/"$2"-*.txt; do
    f=${f#requirements/"$2"-}
    have+="${have:+ and }${f%.txt}"
  done
  echo "$3: $1 is Python $v; AIPool supports Python $have (Debian 12's and Debian 13's" \
    "python3): name one with PYTHON=" >&2
  exit 1
}
