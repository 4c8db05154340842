"""The portal's control loops: the daemon that makes inference services and registry runs
what the requests recorded (requests only read and record; this package is the one writer of
replica jobs and run results). See :mod:`portal.control.daemon`."""
