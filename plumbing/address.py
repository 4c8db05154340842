"""Where a daemon serves ``/metrics``: a host and a port, parsed from the configuration.

Light on purpose (no Prometheus import): the policy daemon's configuration is read by
code that must stay pure.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Address:
    """Where a daemon serves ``/metrics``: a host (an IP address or ``localhost``) and a
    port (0: any free one, for tests)."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_address(text: object) -> Address:
    """``127.0.0.1:9101``, ``[::1]:9101``, ``localhost:9101``; raises ValueError saying why."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"not an address: {text!r} (use host:port, e.g. 127.0.0.1:9101)")
    raw = text.strip()
    m = re.fullmatch(r"\[([0-9a-fA-F:.]+)\]:(\d{1,5})|([^:\[\]\s]+):(\d{1,5})", raw)
    if not m:
        raise ValueError(f"not an address: {text!r} (use host:port, e.g. 127.0.0.1:9101)")
    host = m.group(1) or m.group(3)
    port = int(m.group(2) or m.group(4))
    if port > 65535:
        raise ValueError(f"port out of range in {text!r}")
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(f"not an IP address: {host!r} in {text!r}") from None
    return Address(host, port)
