"""SRM API gateway: the FastAPI read side and command entry point."""
