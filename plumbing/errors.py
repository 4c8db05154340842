"""Errors the daemons' configurations share."""

from __future__ import annotations


class ConfigError(ValueError):
    """The configuration is invalid; ``messages`` are ``path: message`` lines."""

    def __init__(self, messages: list[str]) -> None:
        self.messages = tuple(messages)
        super().__init__("\n".join(self.messages))
