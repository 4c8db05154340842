"""Trace-driven simulator: the shared placement and queue policies on a virtual cluster."""
