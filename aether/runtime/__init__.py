"""Runtime: the daemon and the services it runs."""
