"""Adapter: the Docker engine (see engine.py)."""
