"""Card-hour accounting: sacct ingestion, rollups, reports, alerts and retention.

Runs with or without the portal: its tables are SQLAlchemy models on its own declarative base
(:mod:`accounting.db`) with its own Alembic history (:mod:`accounting.migrate`), used here
through plain engines and connections. It imports neither the portal nor Flask; where it needs
to know the portal's tenants, the caller passes a check in.
"""
