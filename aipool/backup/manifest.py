"""The archive's manifest: what an archive holds, and the one error every step raises."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from translations import N_, Message

FORMAT = "aipool-backup"
VERSION = 1
MANIFEST = "manifest.json"
CHECKSUM = "manifest.sha256"  # the SHA-256 of the manifest's bytes: the archive's own checksum
# member names inside an archive
PORTAL_SQLITE = "db/portal.sqlite"
PORTAL_PGDUMP = "db/portal.pgdump"
SLURMDBD_SQL = "db/slurmdbd.sql"
CONFIG_PREFIX = "config/"
FILES_PREFIX = "files/"


class BackupError(Exception):
    """A refusal or a failure, said in a sentence the reader's language can render."""

    def __init__(self, message: Message) -> None:
        super().__init__(str(message))
        self.message = message


def error(msgid: str, **params: Any) -> BackupError:
    return BackupError(Message.of(msgid, **params))


@dataclass(frozen=True, slots=True)
class Member:
    """One file in the archive."""

    name: str
    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Reference:
    """A store's file kept only by reference: where it was, its size and checksum."""

    store: str
    path: str  # relative to the store's directory
    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Manifest:
    created_at: str  # ISO 8601, UTC
    aipool_version: str
    slurm_version: str
    cluster: str
    # what was taken and from where: {"portal_db": {"kind": "sqlite", "member": …}, …}
    parts: dict[str, Any]
    members: tuple[Member, ...]
    references: tuple[Reference, ...] = ()
    format: str = FORMAT
    version: int = VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> bytes:
        data = asdict(self)
        return (json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()

    @classmethod
    def from_json(cls, raw: bytes) -> Manifest:
        """Parse a manifest, refusing anything that is not one of ours in a known version."""
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise error(N_("This is not an AIPool backup archive (its manifest is foreign)."))
            if data.get("version") != VERSION:
                raise error(
                    N_("The archive's format version %(version)s is not one this AIPool reads."),
                    version=data.get("version"),
                )
            return cls(
                created_at=str(data["created_at"]),
                aipool_version=str(data["aipool_version"]),
                slurm_version=str(data["slurm_version"]),
                cluster=str(data["cluster"]),
                parts=dict(data["parts"]),
                members=tuple(Member(**m) for m in data["members"]),
                references=tuple(Reference(**r) for r in data.get("references", ())),
                extra=dict(data.get("extra", {})),
            )
        except BackupError:
            raise
        except (ValueError, KeyError, TypeError) as exc:
            raise error(N_("The archive's manifest is unreadable: %(why)s"), why=exc) from None

    def member(self, name: str) -> Member | None:
        return next((m for m in self.members if m.name == name), None)
