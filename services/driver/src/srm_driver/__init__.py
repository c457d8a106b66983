"""SRM driver: copies topics between Kafka clusters with PySpark, one worker per flow."""
