"""Usage of compute (card-hours, CPU-hours) for the caller's tenants, from :mod:`accounting`."""
