"""Node health: agent reports → pure verdicts → drain, resume and alerts (docs/health.md)."""
