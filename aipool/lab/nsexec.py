"""Run one lab daemon as if it were on a host of its own.

slurmctld decides whether it is the primary or a backup by comparing ``gethostname()`` with
the ``SlurmctldHost`` names, and (with ``NoCtldInAddrAny``) binds to the address that name
resolves to. So each lab controller runs under ``unshare --uts --mount`` and this module, in
the new namespaces, sets the host name, bind-mounts a private ``/etc/hosts`` that maps the name
to the controller's own loopback address, bind-mounts the controller's own run directory (pid
file), then execs the daemon — same PID, so the lab's ledger still names the daemon itself.
``unshare --mount`` keeps the mounts inside: the host's ``/etc/hosts`` is never changed.
The lab's slurmdbd, slurmd and single slurmctld run the same way, under the host's own name
mapped to the lab's address (``Lab.as_lab_host``).

    unshare --uts --mount -- python -m aipool.lab.nsexec --hostname aipool-ctl2 \\
        --bind HOSTS_FILE /etc/hosts --bind RUN_DIR_2 RUN_DIR -- slurmctld -D -L LOG
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from collections.abc import Sequence


def nsexec_argv(
    python: str, hostname: str, binds: Sequence[tuple[str, str]], argv: Sequence[str]
) -> list[str]:
    """The full command line that starts ``argv`` in its own UTS and mount namespaces."""
    # slave: mounts made on the host later still reach the daemon's jobs; its own stay inside
    out = ["unshare", "--uts", "--mount", "--propagation", "slave", "--"]
    out += [python, "-m", "aipool.lab.nsexec"]
    out += ["--hostname", hostname]
    for src, dst in binds:
        out += ["--bind", src, dst]
    return [*out, "--", *argv]


def main(args: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m aipool.lab.nsexec")
    parser.add_argument("--hostname", required=True)
    parser.add_argument("--bind", nargs=2, action="append", default=[], metavar=("SRC", "DST"))
    parser.add_argument("command", nargs=argparse.REMAINDER)
    ns = parser.parse_args(args)
    command = ns.command[1:] if ns.command[:1] == ["--"] else ns.command
    if not command:
        parser.error("no command to run")
    socket.sethostname(ns.hostname)
    for src, dst in ns.bind:
        subprocess.run(["mount", "--bind", src, dst], check=True)
    sys.stdout.flush()
    os.execvp(command[0], command)  # noqa: S606 - argv list, replaces this process


if __name__ == "__main__":
    main()
