"""clusters."""
