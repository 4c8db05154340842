"""The token service: slurmrestd tokens for ordinary users, minted by the one process that
may read the cluster's JWT key, for the one caller (the portal's user) that may ask.

A compromise of the portal's user gives tokens for ordinary users only, as the portal itself
legitimately holds them: never root, a system account, SlurmUser or a Slurm operator.
"""

from slurm_plugins.tokens.wire import Minted, TokenClient, TokenError

__all__ = ["Minted", "TokenClient", "TokenError"]
