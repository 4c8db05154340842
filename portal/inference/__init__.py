"""Inference services: a model version served over HTTP by Slurm jobs, proxied by the portal."""
