"""The hostile tenant's book: every attempt, and every leak among them (leaks must be 0)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Ledger:
    """Attempts and leaks, reported at the end of a module."""

    attempts: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)

    def attempt(self, what: str, shown: str, *secrets_: str) -> None:
        self.attempts.append(what)
        for secret in secrets_:
            if secret and secret in shown:
                self.leaks.append(f"{what}: showed {secret[:24]!r}")

    def check(self, what: str, leaked: bool, shown: str = "") -> None:
        """An attempt whose outcome the caller judged: ``leaked`` with what it showed."""
        self.attempts.append(what)
        if leaked:
            self.leaks.append(f"{what}: {shown[:200]!r}")

    def report(self, name: str) -> None:
        print(f"\n{name}: {len(self.attempts)} attempts, {len(self.leaks)} leaks")
        for leak in self.leaks:
            print(f"  LEAK {leak}")
