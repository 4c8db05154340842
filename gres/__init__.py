"""Device inventory, shard plans and GRES configuration rendering."""
