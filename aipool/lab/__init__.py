"""The development lab: a real Slurm cluster on one host for tests and the demo (``aipool lab``)."""
