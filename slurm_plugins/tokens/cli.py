"""``python -m slurm_plugins.tokens``: the token service, under its own system user.

It reads the JWT key once, refuses to start when the caller (the portal's user) could read the
key itself, reads Slurm's operators and daemon accounts (``sacctmgr``, ``scontrol``) and
refreshes them every ``--refresh`` seconds, then serves the socket. ``--check`` reads and checks
everything and exits (0 when the service would start); ``--once`` answers one connection;
``--dry-run`` audits its decisions and mints nothing. Bad options or custody exit with 2.
"""

from __future__ import annotations

import json
import os
import pwd
import threading
from pathlib import Path

import click

from plumbing.cli import fail
from slurm_plugins.client import SlurmClient
from slurm_plugins.tokens.policy import Policy
from slurm_plugins.tokens.server import Audit, TokenService, custody_problems, listen, serve


def _uid(name: str) -> int:
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        fail([f"no such user: {name}"], 2)


@click.command()
@click.option("--key", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The cluster's JWT key (AuthAltParameters=jwt_key=…).")  # fmt: skip
@click.option("--socket", "socket_path", type=click.Path(path_type=Path), required=True,
              help="Where to listen; only the caller's group may enter its directory.")  # fmt: skip
@click.option("--caller", required=True, help="The only user that may ask (the portal's).")
@click.option("--audit", "audit_path", type=click.Path(dir_okay=False, path_type=Path),
              required=True, help="Audit log: one JSON line per mint or refusal.")  # fmt: skip
@click.option("--max-lifespan", type=click.IntRange(1, 3600), default=600, show_default=True)
@click.option("--min-uid", type=int, default=1000, show_default=True,
              help="Accounts below this uid are system accounts: never a token.")  # fmt: skip
@click.option("--max-uid", type=int, default=59999, show_default=True)
@click.option("--refuse", multiple=True, help="A further account that never gets a token.")
@click.option("--refresh", type=click.FloatRange(5), default=300.0, show_default=True,
              help="Seconds between reads of Slurm's operators.")  # fmt: skip
@click.option("--check", is_flag=True, help="Check the custody and Slurm's lists, then exit.")
@click.option("--once", is_flag=True, help="Answer one connection, then exit.")
@click.option("--dry-run", is_flag=True, help="Decide and audit; mint nothing.")
def main(
    *,
    key: Path,
    socket_path: Path,
    caller: str,
    audit_path: Path,
    max_lifespan: int,
    min_uid: int,
    max_uid: int,
    refuse: tuple[str, ...],
    refresh: float,
    check: bool,
    once: bool,
    dry_run: bool,
) -> None:
    caller_uid = _uid(caller)
    me = pwd.getpwuid(os.getuid()).pw_name
    if os.getuid() in (0, caller_uid):
        fail([f"run the token service as its own user, not as {me}"], 2)
    try:
        secret = key.read_bytes()
        problems = custody_problems(key, caller_uid)
    except OSError as exc:
        fail([f"cannot read the JWT key: {exc}"], 2)
    if problems:
        fail(problems, 2)
    policy = Policy(
        caller_uid=caller_uid,
        max_lifespan=max_lifespan,
        min_uid=min_uid,
        max_uid=max_uid,
        refused=frozenset({"root", caller, me, *refuse}),
        refused_uids=frozenset({0, caller_uid, os.getuid()}),
    )
    service = TokenService(secret, policy, Audit(audit_path), dry_run=dry_run)
    client = SlurmClient(timeout=30)
    service.refresh(client, me)
    if check:
        ready = service.policy.privileged is not None
        shown = {
            "caller": caller,
            "privileged": sorted(service.policy.privileged or ()),
            "refused": sorted(service.policy.refused),
            "ready": ready,
        }
        click.echo(json.dumps(shown, indent=2))
        raise click.exceptions.Exit(0 if ready else 1)

    def refresher() -> None:
        while not stop.wait(refresh):
            service.refresh(client, me)

    stop = threading.Event()
    threading.Thread(target=refresher, daemon=True).start()
    sock = listen(socket_path)
    service.audit.write("started", socket=str(socket_path), caller=caller)
    try:
        serve(service, sock, once=once)
    finally:
        stop.set()
        sock.close()
