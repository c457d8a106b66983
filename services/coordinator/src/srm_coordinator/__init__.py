"""SRM coordinator: the only writer of the configuration and assignment event log."""
