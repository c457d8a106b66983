"""SRM driver: mirrors topics between clusters with PySpark (one worker per flow); the data path lands with the replication-engine issue."""
