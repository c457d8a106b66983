"""Local development stack: Kafka jars, KRaft clusters as processes, Kafka tools, `make up`."""
