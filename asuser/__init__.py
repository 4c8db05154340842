"""Code that runs as a cluster user, never as a service.

The as-the-user agent (``python -m asuser.agent``, started by the root helper as the user)
and what later moves here (app launchers, the preset programs). It imports neither the
portal nor Flask (import-linter contract ``asuser``): a process of this package has the user's
rights and nothing of the services'.
"""
