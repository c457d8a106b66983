"""Copying records: the driver's copy service, its control channel to the copy slots,
reconciling partitions, and the Spark job the slots run in."""
