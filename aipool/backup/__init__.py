"""Backup and restore of one AIPool site: ``aipool backup create|verify|restore|prune``.

An archive is one compressed tar file holding the portal's and accounting's database,
slurmdbd's accounting database, the rendered Slurm and AIPool configuration and the
registry's and datasets' files (or only their paths, sizes and checksums), with a manifest
that lists every member's size and SHA-256 and a checksum of the manifest itself
(docs/backup.md).
"""
