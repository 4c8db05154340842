"""Datasets: immutable, checksummed versions from uploads, cluster paths and S3 stores."""
