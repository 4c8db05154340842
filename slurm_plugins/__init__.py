"""Slurm-side parts of AIPool: the client, the admission hook and the policies."""
