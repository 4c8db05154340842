"""Elastic nodes: Slurm's power saving switched by AIPool's resume and suspend programs through
a site's driver (a command per node, IPMI, a cloud API, or the lab's slurmd starter), with
per-partition floors and ceilings, and the energy saved reckoned from the programs' log."""
