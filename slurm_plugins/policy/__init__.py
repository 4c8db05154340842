"""The policy daemon: snapshot → pure plan → apply, with policies as named plug-ins.

Policies (:mod:`slurm_plugins.policy.policies`) never touch Slurm; only
:mod:`slurm_plugins.policy.apply` and :mod:`slurm_plugins.policy.daemon` use the client.
"""
