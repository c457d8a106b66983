"""SRM coordinator: sole writer of the configuration and assignment event log; lands with the coordinator issue."""
