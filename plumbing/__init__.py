"""Plumbing the services share: the JSON codec, the state store, notifier sinks (mail, chat
webhooks), Prometheus exposition, configuration errors and the commands' helpers.

The policy daemon, the health checker, the node agent, the power programs, the token service
and accounting use these modules. Nothing here knows a policy, a health verdict, a tenant or a
Slurm command: the package imports none of the others but ``translations``.
"""
