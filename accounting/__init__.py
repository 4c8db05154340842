"""Card-hour accounting: sacct ingestion, rollups, reports, alerts and retention.

Runs with or without the portal: the tables are SQLAlchemy models on the portal's declarative
base (one Alembic history), used here through plain engines and connections.
"""
