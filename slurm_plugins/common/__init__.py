"""Plumbing the daemons share: the JSON codec, the state store, notifier sinks and mail.

The policy daemon, the health checker and the node agent use these modules; nothing here
knows a policy, a health verdict or a Slurm command.
"""
