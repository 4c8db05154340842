"""Column helpers shared by the resource models: the ones accounting's tables use too, from
:mod:`dbtypes` (below both packages)."""

from __future__ import annotations

from dbtypes import UTCDateTime, utcnow

__all__ = ["UTCDateTime", "utcnow"]
