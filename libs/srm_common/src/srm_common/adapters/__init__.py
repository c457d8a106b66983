"""Adapters: implement the ports with real technology and map its errors into ``errors.py``."""
