"""quotas."""
