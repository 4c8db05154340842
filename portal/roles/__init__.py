"""roles."""
