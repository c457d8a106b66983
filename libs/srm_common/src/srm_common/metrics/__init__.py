"""Replication metrics: the raw records drivers write and the aggregator folds."""
