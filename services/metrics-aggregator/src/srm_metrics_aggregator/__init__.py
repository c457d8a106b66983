"""SRM metrics aggregator: Faust app folding raw replication metrics into windowed aggregates."""
