"""Adapter: OCI registries over the distribution API (client.py and its parts), with auth and
retries; GHCR's package API for what OCI cannot do there (ghcr.py)."""
