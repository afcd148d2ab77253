"""Adapters that read images from registries, engines, archives and OCI layouts."""
