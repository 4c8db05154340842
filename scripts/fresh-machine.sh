#!/usr/bin/env bash
# Run a command on a fresh clone of this repository inside a brand-new minimal Debian root:
# what a newcomer's machine has after `git clone`, and nothing that was installed here by hand.
#
#   usage: scripts/fresh-machine.sh [--suite bookworm|trixie] [--keep DIR] 'COMMAND'
#   e.g.   scripts/fresh-machine.sh 'bash scripts/demo.sh && bash scripts/test.sh'
#
# The clone is of HEAD (commit first). The base root is built once with Debian's mmdebstrap
# (minbase + ca-certificates and git) and cached as a tarball in $AIPOOL_FRESH_CACHE
# (default /var/cache/aipool-fresh); each run unpacks it anew. The command runs as root in its
# own mount namespace with proc, sys, dev and a tmpfs /run, this host's network, and Debian's
# default /etc/hosts (the host name resolves to 127.0.1.1). The host's CA bundle, resolver and
# pip configuration are copied in (local package directories pip names are mounted read-only).
# What the command left under the clone's out/ (the page walk's screenshots) is copied to
# out/fresh-<suite>/ of this checkout. Every process left in the root is killed afterwards and
# the root removed, unless --keep DIR
# names where to keep it (a kept DIR is reused: the command then runs in it again).
# Exit status: the command's.
set -euo pipefail

suite=bookworm
keep=""
while [ $# -gt 1 ]; do
  case "$1" in
    --suite) suite=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    *) echo "fresh-machine: unknown option $1 (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done
if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 [--suite bookworm|trixie] [--keep DIR] 'COMMAND'" >&2
  exit 2
fi
cmd=$1
case "$suite" in bookworm | trixie) ;; *) echo "fresh-machine: suite must be bookworm or trixie" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "fresh-machine: run as root (it builds a root file system)" >&2; exit 2; }
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)

cache=${AIPOOL_FRESH_CACHE:-/var/cache/aipool-fresh}
tarball=$cache/$suite.tar
mkdir -p "$cache"
if [ ! -f "$tarball" ]; then
  command -v mmdebstrap >/dev/null || {
    apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends mmdebstrap >/dev/null
  }
  t0=$SECONDS
  rm -rf "$cache/$suite.part.tar"         # mmdebstrap picks the format by the .tar ending
  mmdebstrap --quiet --variant=minbase --include=ca-certificates,git \
    "$suite" "$cache/$suite.part.tar" http://deb.debian.org/debian
  mv "$cache/$suite.part.tar" "$tarball"
  echo "fresh-machine: built the $suite base root in $((SECONDS - t0)) s ($tarball)"
fi

if [ -n "$keep" ]; then
  root=$(mkdir -p "$keep" && cd "$keep" && pwd)
else
  root=$(mktemp -d /var/tmp/aipool-fresh.XXXXXX)
fi
cleanup() {
  # the command's daemons (slurmd, mariadb, ...) may outlive it: end everything in the root
  for _ in 1 2 3 4 5; do
    pids=$(for p in /proc/[0-9]*; do
      [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && echo "${p#/proc/}"; done || true)
    [ -z "$pids" ] && break
    # shellcheck disable=SC2086
    kill -9 $pids 2>/dev/null || true
    sleep 1
  done
  if [ -z "$keep" ]; then rm -rf --one-file-system "$root"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT   # so that a stopped run still cleans up

if [ ! -d "$root/etc" ]; then
  tar -C "$root" -xf "$tarball"
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  hostname > "$root/etc/hostname"
  # Debian's installer writes exactly this
  cat > "$root/etc/hosts" <<EOF
127.0.0.1	localhost
127.0.1.1	$(hostname)

# The following lines are desirable for IPv6 capable hosts
::1     localhost ip6-localhost ip6-loopback
ff02::1 ip6-allnodes
ff02::2 ip6-allrouters
EOF
  if [ -f /etc/pip.conf ]; then cp /etc/pip.conf "$root/etc/pip.conf"; fi
  if [ -d /etc/xdg/pip ]; then mkdir -p "$root/etc/xdg"; cp -r /etc/xdg/pip "$root/etc/xdg/"; fi
  git clone -q --no-hardlinks "$repo" "$root/root/aipool"
  echo "fresh-machine: $suite root in $root, clone of $(git -C "$repo" rev-parse --short HEAD)"
else
  # a kept root: same machine, the clone moved to this HEAD (as a newcomer's `git pull`)
  git -C "$root/root/aipool" fetch -q "$repo" HEAD
  git -C "$root/root/aipool" reset -q --hard FETCH_HEAD
  echo "fresh-machine: kept root $root, clone at $(git -C "$repo" rev-parse --short HEAD)"
fi

# local package directories that pip's configuration names (file:// indexes, find-links)
localdirs=$({ pip config list 2>/dev/null || true; env | grep '^PIP_' || true; } \
  | grep -oE '(file://)?/[^ '"'"'",]+' | sed 's|^file://||' \
  | while read -r d; do d=${d%/simple}; [ -d "$d" ] && echo "$d"; done | sort -u | tr '\n' ' ')
for d in $localdirs; do mkdir -p "$root$d"; done
printf '%s\n' "set -e" "cd /root/aipool" "$cmd" > "$root/root/fresh-command.sh"
pipenv=$(env | grep -E '^PIP_(CERT|FIND_LINKS|DEFAULT_TIMEOUT|INDEX_URL|EXTRA_INDEX_URL|DISABLE_PIP_VERSION_CHECK)=' \
  | tr '\n' ' ' || true)

set +e
ROOT=$root LOCALDIRS=$localdirs PIPENV=$pipenv CI_FLAG=${CI:-} \
  unshare --mount --propagation private bash -c '
  set -e
  # the root is a mount point, as on a real machine (unshare --propagation needs one)
  mount --bind "$ROOT" "$ROOT"
  mount -t proc proc "$ROOT/proc"
  mount --rbind /sys "$ROOT/sys"
  mount --rbind /dev "$ROOT/dev"
  mount -t tmpfs -o mode=755 tmpfs "$ROOT/run"
  for d in $LOCALDIRS; do mount --bind -o ro "$d" "$ROOT$d"; done
  # shellcheck disable=SC2086
  exec chroot "$ROOT" env -i HOME=/root TERM=dumb LANG=C.UTF-8 CI="$CI_FLAG" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    $PIPENV bash /root/fresh-command.sh' </dev/null
rc=$?
set -e
# what the tests left for a person to look at (screenshots of the page walk, reports): kept
# beside this checkout, under its ignored out/, before the root goes
if [ -d "$root/root/aipool/out" ]; then
  rm -rf "$repo/out/fresh-$suite" && mkdir -p "$repo/out"
  cp -a "$root/root/aipool/out" "$repo/out/fresh-$suite"
  echo "fresh-machine: the tests' artifacts are in $repo/out/fresh-$suite"
fi
echo "fresh-machine: command exited $rc"
exit $rc
