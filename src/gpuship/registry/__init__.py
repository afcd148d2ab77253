"""Adapter: OCI registries over the distribution API (client.py), with auth and retries."""
