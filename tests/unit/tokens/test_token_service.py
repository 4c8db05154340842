"""The token service: who is refused, lifespan caps and malformed requests, over real Unix
sockets (a socketpair, a listening socket, a forked peer of another uid)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import stat
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jwt
import pytest
from click.testing import CliRunner

from portal.slurm import ClusterSlurm
from slurm_plugins.client import AuthenticationError, ControllerUnavailable, SlurmClient
from slurm_plugins.client.runner import Completed
from slurm_plugins.tokens import TokenClient, TokenError
from slurm_plugins.tokens.cli import main
from slurm_plugins.tokens.policy import Policy, Reason, Request, decide
from slurm_plugins.tokens.server import Audit, TokenService, custody_problems, listen, serve
from slurm_plugins.tokens.wire import MAX_LINE

KEY = b"k" * 32
NOW = 1_700_000_000
#: the accounts this host would have: name -> uid
ACCOUNTS = {
    "root": 0,
    "slurm": 64030,
    "aipool": 998,
    "aipool-token": 997,
    "daemon": 1,
    "nobody": 65534,
    "alice": 1001,
    "bob": 1002,
    "opsadmin": 1500,
    "ops-operator": 1501,
}
ME = os.getuid()


def _policy(**kw: Any) -> Policy:
    base: dict[str, Any] = {
        "caller_uid": ME,
        "max_lifespan": 600,
        "refused": frozenset({"root", "slurm", "aipool", "aipool-token"}),
        "refused_uids": frozenset({0, 64030}),
        "privileged": frozenset({"opsadmin", "ops-operator", "aipool", "aipool-token"}),
    }
    return Policy(**{**base, **kw})


# ---------------------------------------------------------------------- the pure decision
REFUSED = [
    ("root", Reason.REFUSED_NAME),
    ("slurm", Reason.REFUSED_NAME),
    ("aipool", Reason.REFUSED_NAME),
    ("aipool-token", Reason.REFUSED_NAME),
    ("daemon", Reason.SYSTEM_UID),
    ("nobody", Reason.SYSTEM_UID),
    ("opsadmin", Reason.PRIVILEGED),
    ("ops-operator", Reason.PRIVILEGED),
    ("mallory", Reason.NO_ACCOUNT),
    ("", Reason.BAD_NAME),
    ("../etc", Reason.BAD_NAME),
    ("alice bob", Reason.BAD_NAME),
    ("alice\n", Reason.BAD_NAME),
    ("Alice", Reason.BAD_NAME),
    ("a" * 40, Reason.BAD_NAME),
]


@pytest.mark.parametrize(("user", "reason"), REFUSED)
def test_who_is_refused(user: str, reason: Reason) -> None:
    got = decide(_policy(), ME, Request(user, 60), ACCOUNTS.get)
    assert (got.allowed, got.reason) == (False, reason)


def test_a_renamed_root_is_refused_by_its_uid() -> None:
    accounts = {**ACCOUNTS, "toor": 0, "slurmtoo": 64030}
    for user in ("toor", "slurmtoo"):
        got = decide(_policy(min_uid=0), ME, Request(user, 60), accounts.get)
        assert got.reason is Reason.REFUSED_NAME, user


LIFESPANS = [(1, True), (600, True), (0, False), (-5, False), (601, False), (10**9, False)]


@pytest.mark.parametrize(("lifespan", "allowed"), LIFESPANS)
def test_lifespan_is_capped(lifespan: int, allowed: bool) -> None:
    got = decide(_policy(), ME, Request("alice", lifespan), ACCOUNTS.get)
    assert got.allowed is allowed
    if not allowed:
        assert got.reason is Reason.LIFESPAN


def test_an_ordinary_user_gets_one_and_only_the_caller_or_root_asks() -> None:
    policy = _policy(caller_uid=4242)
    assert decide(policy, 4242, Request("alice", 60), ACCOUNTS.get).allowed
    assert decide(policy, 0, Request("alice", 60), ACCOUNTS.get).allowed  # reads the key anyway
    assert decide(policy, 0, Request("root", 60), ACCOUNTS.get).allowed  # and could mint this
    assert decide(policy, 0, Request("root", 6000), ACCOUNTS.get).reason is Reason.LIFESPAN
    assert decide(policy, 4242, Request("root", 60), ACCOUNTS.get).reason is Reason.REFUSED_NAME
    assert decide(policy, 4243, Request("alice", 60), ACCOUNTS.get).reason is Reason.PEER
    assert decide(policy, 65534, Request("alice", 60), ACCOUNTS.get).reason is Reason.PEER


def test_nobody_gets_one_before_the_operators_are_known() -> None:
    got = decide(_policy(privileged=None), ME, Request("alice", 60), ACCOUNTS.get)
    assert got.reason is Reason.NOT_READY


# ---------------------------------------------------------------------- over a socket
@pytest.fixture
def audit(tmp_path: Path) -> Audit:
    return Audit(tmp_path / "audit.log", clock=lambda: NOW)


def _service(audit: Audit, **policy: Any) -> TokenService:
    return TokenService(KEY, _policy(**policy), audit, uid_of=ACCOUNTS.get, clock=lambda: NOW)


def _ask(service: TokenService, raw: bytes, *, close: bool = True) -> dict[str, Any]:
    """Send ``raw`` on one end of a socketpair while the service answers on the other."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    worker = threading.Thread(target=service.handle, args=(theirs,))
    worker.start()
    try:
        ours.sendall(raw)
        if close:
            ours.shutdown(socket.SHUT_WR)
        ours.settimeout(10)
        reply = ours.makefile("rb").readline()
    finally:
        worker.join(10)
        ours.close()
        theirs.close()
    doc: dict[str, Any] = json.loads(reply)
    return doc


def _records(audit: Audit) -> list[dict[str, Any]]:
    return [json.loads(line) for line in audit.path.read_text().splitlines()]


def test_a_token_for_alice_is_short_lived_and_audited(audit: Audit) -> None:
    reply = _ask(_service(audit), b'{"user": "alice", "lifespan": 90}\n')
    assert reply["ok"]
    assert reply["user"] == "alice"
    assert reply["expires"] == NOW + 90
    claims = jwt.decode(reply["token"], KEY, algorithms=["HS256"], options={"verify_exp": False})
    assert claims == {"iat": NOW, "exp": NOW + 90, "sun": "alice"}
    (record,) = _records(audit)
    assert record["event"] == "minted"
    assert record["user"] == "alice"
    assert record["peer_uid"] == ME
    assert record["peer_pid"] == os.getpid()
    assert reply["token"] not in audit.path.read_text()
    assert stat.S_IMODE(audit.path.stat().st_mode) == 0o640


@pytest.mark.parametrize(("user", "reason"), REFUSED[:9])
def test_refusals_are_answered_and_audited(audit: Audit, user: str, reason: Reason) -> None:
    reply = _ask(_service(audit), json.dumps({"user": user, "lifespan": 60}).encode() + b"\n")
    assert reply == {"ok": False, "reason": str(reason), "detail": reply["detail"]}
    (record,) = _records(audit)
    assert (record["event"], record["user"], record["reason"]) == ("refused", user, str(reason))


MALFORMED = {
    "not JSON": b"alice please\n",
    "a list": b'["alice", 60]\n',
    "a missing lifespan": b'{"user": "alice"}\n',
    "an extra field": b'{"user": "alice", "lifespan": 60, "sun": "root"}\n',
    "a string lifespan": b'{"user": "alice", "lifespan": "60"}\n',
    "a boolean lifespan": b'{"user": "alice", "lifespan": true}\n',
    "a float lifespan": b'{"user": "alice", "lifespan": 60.5}\n',
    "a user list": b'{"user": ["root"], "lifespan": 60}\n',
    "no newline": b'{"user": "alice", "lifespan": 60}',
    "nothing": b"",
    "not UTF-8": b'{"user": "\xff\xfe", "lifespan": 60}\n',
    "too long": b'{"user": "' + b"a" * (2 * MAX_LINE) + b'", "lifespan": 60}\n',
    "duplicate keys": b'{"user": "alice", "user": "root", "lifespan": 60}\n',
}


@pytest.mark.parametrize("what", sorted(MALFORMED))
def test_malformed_requests_get_a_clear_refusal(audit: Audit, what: str) -> None:
    service = _service(audit)
    reply = _ask(service, MALFORMED[what])
    if what == "duplicate keys":  # JSON keeps the last: a request for root, refused as such
        assert reply["reason"] == str(Reason.REFUSED_NAME)
    else:
        assert reply["ok"] is False
        assert reply["reason"] == str(Reason.MALFORMED), reply
        assert reply["detail"]
    assert [r["event"] for r in _records(audit)] == ["refused"]
    # and the service still answers the next one
    assert _ask(service, b'{"user": "bob", "lifespan": 5}\n')["ok"]


def test_a_stalled_peer_is_dropped_not_waited_for(audit: Audit, monkeypatch: Any) -> None:
    monkeypatch.setattr("slurm_plugins.tokens.server.TIMEOUT_S", 0.2)
    reply = _ask(_service(audit), b'{"user": "alice", ', close=False)
    assert reply == {"ok": False, "reason": "malformed-request", "detail": reply["detail"]}


def test_dry_run_mints_nothing(audit: Audit) -> None:
    service = _service(audit)
    service.dry_run = True
    reply = _ask(service, b'{"user": "alice", "lifespan": 60}\n')
    assert reply["ok"] is False
    assert "token" not in reply
    assert _records(audit)[0]["event"] == "dry-run"


# ---------------------------------------------------------------------- a listening socket
@pytest.fixture
def served(tmp_path: Path, audit: Audit) -> Iterator[tuple[Path, TokenService]]:
    service = _service(audit)
    # the forked peer below must reach it (pytest's own directories are 0700): the uid check
    # is what stops it
    run = Path(tempfile.mkdtemp(prefix="aipool-tokens-"))
    run.chmod(0o755)
    path = run / "tokens.sock"
    sock = listen(path)
    path.chmod(0o666)
    stop = threading.Event()
    thread = threading.Thread(target=serve, args=(service, sock), kwargs={"stop": stop})
    thread.start()
    yield path, service
    stop.set()
    thread.join(10)
    sock.close()
    shutil.rmtree(run)


def test_concurrent_mixed_requests_leak_nothing(served: tuple[Path, TokenService]) -> None:
    path, service = served
    users = ["alice", "root", "bob", "slurm", "opsadmin", "mallory", "aipool", "nobody"] * 5
    client = TokenClient(str(path))

    def ask(user: str) -> tuple[str, str | None]:
        try:
            return user, client.token(user, 60).token
        except TokenError as exc:
            return user, exc.reason

    with ThreadPoolExecutor(max_workers=len(users)) as pool:
        answers = list(pool.map(ask, users))
    minted = [(u, t) for u, t in answers if t is not None and t.count(".") == 2]
    leaks = [u for u, _ in minted if u not in ("alice", "bob")]
    assert leaks == []
    assert sorted(u for u, _ in minted) == sorted(u for u in users if u in ("alice", "bob"))
    for user, token in minted:
        assert (
            jwt.decode(token, KEY, algorithms=["HS256"], options={"verify_exp": False})["sun"]
            == user
        )
    events = _records(service.audit)
    assert len(events) == len(users)
    assert sum(e["event"] == "minted" for e in events) == len(minted)


def test_the_client_reports_refusals_and_a_missing_service(
    served: tuple[Path, TokenService], tmp_path: Path
) -> None:
    path, _ = served
    with pytest.raises(TokenError) as refused:
        TokenClient(str(path)).token("root", 60)
    assert refused.value.reason == str(Reason.REFUSED_NAME)
    with pytest.raises(TokenError) as gone:
        TokenClient(str(tmp_path / "none.sock")).token("alice", 60)
    assert gone.value.reason == "unreachable"


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to become another uid")
def test_a_peer_of_another_uid_is_refused_by_the_kernel_s_word(
    served: tuple[Path, TokenService],
) -> None:
    path, service = served
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nobody, asking for alice
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            try:
                TokenClient(str(path)).token("alice", 60)
                out = b"minted"
            except TokenError as exc:
                out = exc.reason.encode() + (f" {exc.detail}".encode() if exc.detail else b"")
            except BaseException as exc:  # say what went wrong, not only that it did
                out = repr(exc).encode()
            os.write(write, out)
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as f:
        assert f.read().split(b" ")[0] == str(Reason.PEER).encode()
    refused = [r for r in _records(service.audit) if r["peer_uid"] == 65534]
    assert [r["reason"] for r in refused] == [str(Reason.PEER)]
    assert "user" not in refused[0]  # refused before its request was read


# ---------------------------------------------------------------------- custody and Slurm
@pytest.mark.skipif(os.getuid() != 0, reason="needs root to chown")
def test_custody_refuses_a_key_the_caller_could_read(tmp_path: Path) -> None:
    key = tmp_path / "jwt.key"
    key.write_bytes(KEY)
    os.chown(key, 0, 0)
    key.chmod(0o640)
    assert custody_problems(key, 65534) == []
    key.chmod(0o644)
    assert custody_problems(key, 65534)
    key.chmod(0o600)
    os.chown(key, 65534, 0)
    assert custody_problems(key, 65534)
    os.chown(key, 0, 65534)  # nogroup, nobody's own group
    key.chmod(0o640)
    assert custody_problems(key, 65534)


SACCTMGR = "aipool|Administrator\naipool-token|Operator\nalice|None\nopsadmin|Administrator\n"
CONFIG = "SlurmctldPort           = 6817\nSlurmUser               = slurm(64030)\n" \
         "SlurmdUser              = root(0)\n"  # fmt: skip


class Recorded:
    """Replays sacctmgr's and scontrol's recorded output."""

    def __init__(self, levels: str) -> None:
        self.levels = levels

    def __call__(self, argv: Any, *, input: str | None = None, timeout: float) -> Completed:
        out = self.levels if argv[0] == "sacctmgr" else CONFIG
        return Completed(tuple(argv), 0, out, "")


def test_refresh_reads_operators_and_slurm_s_accounts(audit: Audit) -> None:
    service = _service(
        audit, privileged=None, refused=frozenset({"root"}), refused_uids=frozenset()
    )
    for _ in range(3):  # audited once: when the list changes
        service.refresh(SlurmClient(Recorded(SACCTMGR)), "aipool-token")
    assert [r["event"] for r in _records(audit)] == ["privileged"]
    assert service.policy.privileged == {"aipool", "aipool-token", "opsadmin"}
    assert {"slurm", "root"} <= service.policy.refused
    assert {64030, 0} <= service.policy.refused_uids
    assert _ask(service, b'{"user": "slurm", "lifespan": 60}\n')["reason"] == "refused-account"
    assert _ask(service, b'{"user": "opsadmin", "lifespan": 60}\n')["reason"] == (
        "slurm-operator-or-administrator"
    )
    assert _ask(service, b'{"user": "alice", "lifespan": 60}\n')["ok"]


def test_a_reader_that_does_not_see_every_user_is_not_trusted(audit: Audit) -> None:
    service = _service(audit, privileged=None)
    # PrivateData=users: a reader that is no operator sees only itself, with no level
    service.refresh(SlurmClient(Recorded("aipool-token|None\n")), "aipool-token")
    assert service.policy.privileged is None
    assert (
        _ask(service, b'{"user": "alice", "lifespan": 60}\n')["reason"] == "privileged-list-unknown"
    )
    assert _records(audit)[0]["event"] == "refresh-failed"


def test_the_socket_is_closed_to_others(tmp_path: Path) -> None:
    path = tmp_path / "tokens.sock"
    sock = listen(path)
    try:
        assert stat.S_IMODE(path.stat().st_mode) == 0o660
        assert stat.S_ISSOCK(path.stat().st_mode)
    finally:
        sock.close()


def test_no_token_leaves_when_its_mint_cannot_be_audited(tmp_path: Path) -> None:
    audit = Audit(tmp_path / "missing" / "audit.log")  # a directory that is not there
    service = _service(audit)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours, theirs:
        ours.sendall(b'{"user": "alice", "lifespan": 60}\n')
        assert service.handle(theirs) is False
        theirs.close()
        assert ours.recv(4096) == b""


# ---------------------------------------------------------------------- the portal's side
def test_the_portal_asks_the_service_and_maps_its_refusals(
    served: tuple[Path, TokenService], tmp_path: Path
) -> None:
    path, _ = served
    port = ClusterSlurm(SlurmClient(Recorded("")), "http://rest.invalid", str(path))
    with port._rest("alice") as rest:  # a token from the service, for alice
        assert rest.user == "alice"
    with pytest.raises(AuthenticationError, match="refused-account"):
        port._rest("root")
    gone = ClusterSlurm(SlurmClient(Recorded("")), "http://rest.invalid", str(tmp_path / "x"))
    with pytest.raises(ControllerUnavailable, match="unreachable"):
        gone._rest("alice")


def test_the_daemon_will_not_run_as_root_or_as_its_caller(tmp_path: Path) -> None:
    key = tmp_path / "jwt.key"
    key.write_bytes(KEY)
    args = ["--key", str(key), "--socket", str(tmp_path / "s"), "--audit", str(tmp_path / "a")]
    me = pwd.getpwuid(os.getuid()).pw_name
    done = CliRunner().invoke(main, [*args, "--caller", me, "--check"])
    assert done.exit_code == 2
    assert "its own user" in done.output
    done = CliRunner().invoke(main, [*args, "--caller", "no-such-user-x", "--check"])
    assert done.exit_code == 2
    assert "no such user" in done.output


def test_root_is_served_over_the_socket_though_not_the_caller(audit: Audit) -> None:
    """Root reads the key itself: the service answers it as it answers its caller (the lab's
    tests run their portals as root)."""
    reply = _ask(_service(audit, caller_uid=ME + 4242), b'{"user": "alice", "lifespan": 60}\n')
    if ME == 0:
        assert reply["ok"], reply
    else:
        assert reply["reason"] == str(Reason.PEER)
