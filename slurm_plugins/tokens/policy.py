"""Who may have a slurmrestd token minted, and for how long: a pure decision.

The token service asks :func:`decide` for every request. It refuses, in this order: a request
from a peer that is neither the configured caller nor root (who could read the key itself); a
lifespan outside ``1..max_lifespan``; a name that is not a well-formed account name; a name
the site refuses outright (root, SlurmUser, the service accounts); a name with no Unix
account, or whose uid is a system account's (below ``min_uid``) or above ``max_uid``
(``nobody``); and a name Slurm knows as an operator or administrator. Everything else, an
ordinary user, gets a token. Root, which reads the key and could mint any token itself, is
refused nothing but malformed requests and names with no account.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

#: a POSIX-ish account name, as useradd takes it (no shell or path characters)
NAME = re.compile(r"[a-z_][a-z0-9_.-]{0,31}")


class Reason(StrEnum):
    """Why a request was refused (the audit log's and the reply's ``reason``)."""

    PEER = "peer-not-allowed"
    MALFORMED = "malformed-request"
    LIFESPAN = "lifespan-out-of-range"
    BAD_NAME = "invalid-user-name"
    REFUSED_NAME = "refused-account"
    NO_ACCOUNT = "no-such-account"
    SYSTEM_UID = "system-account"
    PRIVILEGED = "slurm-operator-or-administrator"
    NOT_READY = "privileged-list-unknown"
    DRY_RUN = "dry-run"


@dataclass(frozen=True, slots=True)
class Policy:
    """The service's rules, fixed at start but for ``privileged``, refreshed from Slurm."""

    caller_uid: int
    max_lifespan: int = 600
    min_uid: int = 1000
    max_uid: int = 59999
    #: names refused whatever their uid (root, SlurmUser, SlurmdUser, the service accounts)
    refused: frozenset[str] = frozenset({"root"})
    #: uids refused whatever their name (root, SlurmUser's)
    refused_uids: frozenset[int] = frozenset({0})
    #: Slurm operators and administrators (``sacctmgr show user``); None: not read yet
    privileged: frozenset[str] | None = field(default=None)


@dataclass(frozen=True, slots=True)
class Request:
    user: str
    lifespan: int


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: Reason | None = None
    detail: str = ""


ALLOW = Decision(True)

#: a name -> its uid, or None when no such account exists (``pwd.getpwnam``)
UidOf = Callable[[str], int | None]


def may_ask(policy: Policy, peer_uid: int) -> bool:
    """Whether ``peer_uid`` may ask at all: the caller, and root, which reads the key itself
    (answering it gives nothing away: a portal or a command run as root, as the lab's
    integration tests run theirs)."""
    return peer_uid in (policy.caller_uid, 0)


def decide(policy: Policy, peer_uid: int, request: Request, uid_of: UidOf) -> Decision:
    """May ``peer_uid`` have a token for ``request.user`` lasting ``request.lifespan`` s?"""
    if not may_ask(policy, peer_uid):
        return Decision(False, Reason.PEER, f"uid {peer_uid} is not the service's caller")
    if not 1 <= request.lifespan <= policy.max_lifespan:
        return Decision(
            False, Reason.LIFESPAN, f"lifespan must be 1..{policy.max_lifespan} seconds"
        )
    user = request.user
    if not NAME.fullmatch(user):
        return Decision(False, Reason.BAD_NAME, "not an account name")
    uid = uid_of(user)
    if uid is None:
        return Decision(False, Reason.NO_ACCOUNT, "no such Unix account")
    if peer_uid == 0 and peer_uid != policy.caller_uid:
        return ALLOW  # root could mint any token with the key it reads: nothing is given away
    if user in policy.refused:
        return Decision(False, Reason.REFUSED_NAME, "this account never gets a token")
    if uid in policy.refused_uids:
        return Decision(False, Reason.REFUSED_NAME, "this uid never gets a token")
    if not policy.min_uid <= uid <= policy.max_uid:
        return Decision(False, Reason.SYSTEM_UID, f"uid outside {policy.min_uid}..{policy.max_uid}")
    if policy.privileged is None:
        return Decision(False, Reason.NOT_READY, "Slurm's operators are not known yet")
    if user in policy.privileged:
        return Decision(False, Reason.PRIVILEGED, "a Slurm operator or administrator")
    return ALLOW
